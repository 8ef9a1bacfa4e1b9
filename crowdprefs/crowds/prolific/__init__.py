"""Prolific: a study recruits participants for the project's own web server.

``crowd``   the adapter (:class:`~crowdprefs.crowds.prolific.crowd.ProlificCrowd`): publishing,
            topping up, status, reviews and bonuses.
``study``   the study's terms (``[prolific]`` settings, what the judges' site tells it) and the
            pure rules of its places, time, reward, reviews and bonuses.
``store``   the study's part of the project state (a role of the project's store).
``client``  the calls to Prolific's REST API (httpx; the token from ``PROLIFIC_TOKEN`` only).
``fake``    a local fake of that API on 127.0.0.1 that refuses what Prolific refuses
            (``fake_workspace``: its events and its participants).
"""
