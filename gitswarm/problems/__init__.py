"""Problem sets: the file format, its loader and validator, and importers of public formats."""
