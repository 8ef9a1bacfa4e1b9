"""The project state's schema: named migrations, applied in order.

Tables (migration ``0001_core``):

``meta``        key/value facts fixed at ``init`` (seed, creation time).
``candidates``  ``query, document, audio, seconds, position`` (position = row order in the CSV).
``queries``     ``query, audio, seconds`` (the query clip, when known).
``batches``     one per iteration: ``built → published → collected → aggregated``.
``pairs``       the questions of a batch: ``x`` (the member) against ``y`` (the pivot), the side
                shown as variation A, the order within the batch, how many answers are wanted,
                and, once aggregated, the verdict (+1: x more similar, 0, −1) and p-value.
                ``kind = 'check'`` marks attention checks with a known ``expected`` verdict.
                Indexed by ``query, kind, iteration`` (``0009``): each query's progress is read
                in query order (not the verdict: saving a batch's verdicts touches no index).
``hits``        what each crowd published for a pair (its HIT or task id), and at what price
                (``0006``: the reward and MTurk's fee terms when it was published; NULL for
                HITs published before, which are priced at the current settings).
                Indexed by size and price (``0009``): the committed cost groups the index.
``sort_cache``  each query's sort state as JSON with the fingerprint of the verdicts it was
                replayed from: a cache that is only trusted while the fingerprint matches.
``answers``     every answer as it arrived: worker, choice (A/B/equal), ``score`` from x's point of
                view, seconds, background, comment, the raw payload; unique per crowd assignment so
                a retried collect never stores an answer twice. Indexed by ``pair_id, status,
                score`` (``0009``), so a batch's answers are counted per pair from the index
                alone, never reading the answers' rows.
``pair_counts`` per pair, its accepted (not rejected) answers counted by score: ``more``
                (score +1), ``equal``, ``less`` (``0010``). Kept by triggers on ``answers`` in
                the transaction that stores an answer or changes its status, so aggregating a
                batch reads one row a pair instead of grouping its answers; a pair without
                answers has no row. The same migration drops ``pairs_by_query`` (no statement
                looked pairs up by ``query, x, y``; building a batch paid for it) and empties
                the sort cache, whose states it now writes more compactly.
``answer_reviews`` each answer's review decision: ``approve``, ``reject`` (refused, not paid) or
                ``drop`` (``0011``: left out of aggregation like a rejection, yet approved for
                payment — an answer of a worker flagged during the campaign), with its reason
                and when it was decided and applied to the crowd.

Later migrations add the web crowd's judges and assignments, MTurk's reviews and blocks, the
sort cache, ``web_screens`` (each judge's headphone screen: its secret seed, the answers and
whether they passed) and the Prolific study's state: ``prolific_studies`` (the study with the
reward, time and places it was published at), ``prolific_reviews`` (each submission's decision,
stored before it is sent) and ``prolific_bonuses`` / ``prolific_bonus_lines`` (bonuses set up,
and when paid).

Migrations are named and applied in list order, each in its own transaction; ``PRAGMA
user_version`` holds how many have been applied. To change the schema append a new
``(name, sql)`` entry to :data:`MIGRATIONS`; never edit an applied one.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_core",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE queries (query TEXT PRIMARY KEY, audio TEXT, seconds REAL);
        CREATE TABLE candidates (
            query TEXT NOT NULL REFERENCES queries(query),
            document TEXT NOT NULL,
            audio TEXT,
            seconds REAL,
            position INTEGER NOT NULL,
            PRIMARY KEY (query, document)
        );
        CREATE TABLE batches (
            iteration INTEGER PRIMARY KEY,
            status TEXT NOT NULL
                CHECK (status IN ('built', 'published', 'collected', 'aggregated')),
            crowd TEXT,
            created_at TEXT NOT NULL,
            published_at TEXT,
            collected_at TEXT,
            aggregated_at TEXT
        );
        CREATE TABLE pairs (
            pair_id INTEGER PRIMARY KEY,
            iteration INTEGER NOT NULL REFERENCES batches(iteration),
            query TEXT NOT NULL REFERENCES queries(query),
            x TEXT NOT NULL,
            y TEXT NOT NULL,
            a_is_x INTEGER NOT NULL CHECK (a_is_x IN (0, 1)),
            position INTEGER NOT NULL,
            kind TEXT NOT NULL DEFAULT 'sort' CHECK (kind IN ('sort', 'check')),
            expected INTEGER CHECK (expected IN (-1, 0, 1)),
            answers_wanted INTEGER NOT NULL CHECK (answers_wanted > 0),
            verdict INTEGER CHECK (verdict IN (-1, 0, 1)),
            p_value REAL,
            UNIQUE (iteration, query, x, y)
        );
        CREATE INDEX pairs_by_query ON pairs(query, x, y);
        CREATE TABLE hits (
            crowd TEXT NOT NULL,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            hit_id TEXT NOT NULL,
            max_assignments INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open',
            PRIMARY KEY (crowd, pair_id),
            UNIQUE (crowd, hit_id)
        );
        CREATE TABLE answers (
            answer_id INTEGER PRIMARY KEY,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            crowd TEXT NOT NULL,
            assignment_id TEXT NOT NULL,
            worker_id TEXT NOT NULL,
            choice TEXT NOT NULL CHECK (choice IN ('A', 'B', 'equal')),
            score INTEGER NOT NULL CHECK (score IN (-1, 0, 1)),
            seconds REAL,
            accepted_at TEXT,
            submitted_at TEXT,
            background TEXT,
            comment TEXT,
            raw TEXT,
            status TEXT NOT NULL DEFAULT 'submitted'
                CHECK (status IN ('submitted', 'approved', 'rejected')),
            UNIQUE (crowd, assignment_id)
        );
        CREATE INDEX answers_by_pair ON answers(pair_id);
        """,
    ),
    (
        "0002_web_judges_assignments",
        """
        CREATE TABLE web_judges (
            judge_id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL CHECK (source IN ('invite', 'platform')),
            participant TEXT UNIQUE,
            completion_code TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE web_assignments (
            assignment_id TEXT PRIMARY KEY,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            judge_id TEXT NOT NULL REFERENCES web_judges(judge_id),
            csrf TEXT NOT NULL,
            issued_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'submitted', 'released')),
            UNIQUE (pair_id, judge_id)
        );
        CREATE INDEX web_assignments_by_status ON web_assignments(status, pair_id);
        CREATE INDEX web_assignments_by_judge ON web_assignments(judge_id, status);
        """,
    ),
    (
        "0003_mturk_reviews_blocks",
        """
        CREATE TABLE answer_reviews (
            crowd TEXT NOT NULL,
            assignment_id TEXT NOT NULL,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            worker_id TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('approve', 'reject')),
            reason TEXT,
            decided_at TEXT NOT NULL,
            applied_at TEXT,
            PRIMARY KEY (crowd, assignment_id)
        );
        CREATE TABLE worker_blocks (
            crowd TEXT NOT NULL,
            worker_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            decided_at TEXT NOT NULL,
            applied_at TEXT,
            PRIMARY KEY (crowd, worker_id)
        );
        """,
    ),
    (
        "0004_core_answer_status_index",
        """
        CREATE INDEX answers_by_status ON answers(status);
        """,
    ),
    (
        "0005_core_sort_cache",
        """
        CREATE TABLE sort_cache (
            query TEXT PRIMARY KEY REFERENCES queries(query),
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL
        );
        """,
    ),
    (
        "0006_hit_prices",
        """
        ALTER TABLE hits ADD COLUMN reward REAL;
        ALTER TABLE hits ADD COLUMN fee_rate REAL;
        ALTER TABLE hits ADD COLUMN fee_rate_10_or_more REAL;
        ALTER TABLE hits ADD COLUMN fee_minimum REAL;
        """,
    ),
    (
        "0007_web_headphone_screens",
        """
        CREATE TABLE web_screens (
            judge_id TEXT PRIMARY KEY REFERENCES web_judges(judge_id),
            seed INTEGER NOT NULL,
            trials INTEGER NOT NULL CHECK (trials > 0),
            pass_mark INTEGER NOT NULL CHECK (pass_mark > 0),
            csrf TEXT NOT NULL,
            started_at TEXT NOT NULL,
            answers TEXT,
            correct INTEGER,
            passed INTEGER CHECK (passed IN (0, 1)),
            finished_at TEXT
        );
        """,
    ),
    (
        "0008_prolific_studies",
        """
        CREATE TABLE prolific_studies (
            study_id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            reward INTEGER NOT NULL CHECK (reward > 0),
            currency TEXT NOT NULL,
            minutes INTEGER NOT NULL CHECK (minutes > 0),
            questions INTEGER NOT NULL CHECK (questions > 0),
            fee_rate REAL NOT NULL,
            completion_code TEXT NOT NULL,
            places INTEGER NOT NULL,
            status TEXT NOT NULL,
            published_at TEXT
        );
        CREATE TABLE prolific_reviews (
            submission_id TEXT PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES prolific_studies(study_id),
            participant_id TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('approve', 'reject')),
            category TEXT,
            message TEXT,
            decided_at TEXT NOT NULL,
            applied_at TEXT
        );
        CREATE TABLE prolific_bonuses (
            bonus_id TEXT PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES prolific_studies(study_id),
            amount INTEGER NOT NULL CHECK (amount > 0),
            fee_rate REAL NOT NULL,
            created_at TEXT NOT NULL,
            paid_at TEXT
        );
        CREATE TABLE prolific_bonus_lines (
            bonus_id TEXT NOT NULL REFERENCES prolific_bonuses(bonus_id),
            participant_id TEXT NOT NULL,
            amount INTEGER NOT NULL CHECK (amount > 0),
            PRIMARY KEY (bonus_id, participant_id)
        );
        """,
    ),
    (
        "0009_covering_indexes",
        """
        CREATE INDEX answers_by_pair_status_score ON answers(pair_id, status, score);
        DROP INDEX answers_by_pair;
        CREATE INDEX pairs_by_query_kind ON pairs(query, kind, iteration);
        CREATE INDEX hits_by_price
            ON hits(max_assignments, reward, fee_rate, fee_rate_10_or_more, fee_minimum);
        """,
    ),
    (
        "0010_pair_counts",
        """
        DROP INDEX pairs_by_query;
        DELETE FROM sort_cache;
        CREATE TABLE pair_counts (
            pair_id INTEGER PRIMARY KEY REFERENCES pairs(pair_id),
            more INTEGER NOT NULL,
            equal INTEGER NOT NULL,
            less INTEGER NOT NULL
        );
        INSERT INTO pair_counts (pair_id, more, equal, less)
            SELECT pair_id, SUM(score = 1), SUM(score = 0), SUM(score = -1)
            FROM answers WHERE status != 'rejected' GROUP BY pair_id;
        CREATE TRIGGER pair_counts_insert AFTER INSERT ON answers
        WHEN new.status != 'rejected' BEGIN
            INSERT INTO pair_counts (pair_id, more, equal, less)
                VALUES (new.pair_id, new.score = 1, new.score = 0, new.score = -1)
                ON CONFLICT (pair_id) DO UPDATE SET more = more + excluded.more,
                    equal = equal + excluded.equal, less = less + excluded.less;
        END;
        CREATE TRIGGER pair_counts_delete AFTER DELETE ON answers
        WHEN old.status != 'rejected' BEGIN
            UPDATE pair_counts SET more = more - (old.score = 1),
                equal = equal - (old.score = 0), less = less - (old.score = -1)
            WHERE pair_id = old.pair_id;
        END;
        CREATE TRIGGER pair_counts_update AFTER UPDATE OF pair_id, score, status ON answers
        WHEN (old.status = 'rejected') != (new.status = 'rejected')
            OR old.score != new.score OR old.pair_id != new.pair_id BEGIN
            UPDATE pair_counts SET more = more - (old.score = 1),
                equal = equal - (old.score = 0), less = less - (old.score = -1)
            WHERE pair_id = old.pair_id AND old.status != 'rejected';
            INSERT INTO pair_counts (pair_id, more, equal, less)
                SELECT new.pair_id, new.score = 1, new.score = 0, new.score = -1
                WHERE new.status != 'rejected'
                ON CONFLICT (pair_id) DO UPDATE SET more = more + excluded.more,
                    equal = equal + excluded.equal, less = less + excluded.less;
        END;
        """,
    ),
    (
        "0011_drop_decision",
        """
        CREATE TABLE answer_reviews_new (
            crowd TEXT NOT NULL,
            assignment_id TEXT NOT NULL,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            worker_id TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('approve', 'reject', 'drop')),
            reason TEXT,
            decided_at TEXT NOT NULL,
            applied_at TEXT,
            PRIMARY KEY (crowd, assignment_id)
        );
        INSERT INTO answer_reviews_new SELECT * FROM answer_reviews ORDER BY rowid;
        DROP TABLE answer_reviews;
        ALTER TABLE answer_reviews_new RENAME TO answer_reviews;
        """,
    ),
]

SCHEMA_VERSION = len(MIGRATIONS)
