"""The in-house web crowd: judges invited by link answer the HITs on the project's own server.

``security``  unguessable tokens (only their SHA-256 is stored), CSRF tokens, completion codes,
              the clip allow-list and the HTTP security headers.
``assign``    who answers what: distinct judges per pair, never a pair twice to one judge,
              abandoned questions released after a timeout, answers stored as they are posted.
``app``       the Starlette application served by ``crowdprefs serve`` (uvicorn).
``judges``    simulated judges that answer over HTTP (the demo and the load test).
"""
