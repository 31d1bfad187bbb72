"""place_order."""
