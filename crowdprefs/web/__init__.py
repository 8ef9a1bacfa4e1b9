"""The in-house web crowd: judges invited by link answer the HITs on the project's own server.

``security``  unguessable tokens (only their SHA-256 is stored), researcher-token rules, the
              throttle on failed token attempts, CSRF tokens, completion codes, the clip
              allow-list and the HTTP security headers (a CSP without ``'unsafe-inline'``).
``assign``    who answers what: distinct judges per pair, never a pair twice to one judge,
              abandoned questions released after a timeout, answers checked (with the listening
              gate) and stored as they are posted; the state itself is kept by the project's
              store (:mod:`crowdprefs.crowds.web.store`).
``headphones`` the Huggins-pitch headphone screen's noises (numpy, from a secret seed) and
              its scoring; who must pass it, and per-judge caps, are ``[web]`` settings.
``app``       the Starlette application served by ``crowdprefs serve`` (uvicorn): the judges'
              routes, and :func:`~crowdprefs.web.app.serve`; ``python -m crowdprefs.web``
              runs it alone. Beside it: ``http`` (what every handler uses, and the store calls
              off the event loop), ``middleware`` (body limit, admission), ``researcher`` (the
              researcher's pages), ``advancing`` (moving the campaign on, on a worker thread)
              and ``clock`` (the site's time: the wall clock, or a simulation's time lapse).
``judges``    simulated judges that answer over HTTP (the web demo and the load test).
"""
