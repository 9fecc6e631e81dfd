"""The dashboard's read side, free of Textual: its model (port and views) and its sources."""
