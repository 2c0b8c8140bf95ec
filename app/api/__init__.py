"""HTTP layer: request/response schemas, routes and error handlers around the engine."""
