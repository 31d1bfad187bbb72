"""Exchange between databases: the mover that runs the routes declared with mbus.create_route."""

from pgmbus.exchange.bridge import Bridge, Route, RoutesFailed, Transfer

__all__ = ["Bridge", "Route", "RoutesFailed", "Transfer"]
