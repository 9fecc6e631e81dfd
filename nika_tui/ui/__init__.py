"""The dashboard TUI: the Textual app, its screens, widgets and styles, and the web server."""
