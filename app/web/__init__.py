"""The HTML front end: forms, result and history pages, and server-side SVG charts."""
