"""Local model stand-ins: one HTTP core, one module per wire protocol."""
