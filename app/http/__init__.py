"""What the two HTTP adapters (the JSON API in app/api and the pages in app/web) share:
request dependencies, the JSON response class and content negotiation."""
