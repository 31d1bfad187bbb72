"""Commands of the orders app."""
