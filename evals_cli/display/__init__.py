"""Terminal output: progress state, the final table, the live view. State is kept apart from rendering."""
