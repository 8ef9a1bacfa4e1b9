
SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

CREATE TABLE public.answer_reviews (
    crowd text NOT NULL,
    assignment_id text NOT NULL,
    pair_id integer NOT NULL,
    worker_id text NOT NULL,
    decision text NOT NULL,
    reason text,
    decided_at text NOT NULL,
    applied_at text,
    CONSTRAINT answer_reviews_decision_check CHECK ((decision = ANY (ARRAY['approve'::text, 'reject'::text, 'drop'::text])))
);

CREATE TABLE public.answers (
    answer_id integer NOT NULL,
    pair_id integer NOT NULL,
    crowd text NOT NULL,
    assignment_id text NOT NULL,
    worker_id text NOT NULL,
    choice text NOT NULL,
    score integer NOT NULL,
    seconds double precision,
    accepted_at text,
    submitted_at text,
    background text,
    comment text,
    raw text,
    status text DEFAULT 'submitted'::text NOT NULL,
    CONSTRAINT answers_choice_check CHECK ((choice = ANY (ARRAY['A'::text, 'B'::text, 'equal'::text]))),
    CONSTRAINT answers_score_check CHECK ((score = ANY (ARRAY['-1'::integer, 0, 1]))),
    CONSTRAINT answers_status_check CHECK ((status = ANY (ARRAY['submitted'::text, 'approved'::text, 'rejected'::text])))
);

CREATE SEQUENCE public.answers_answer_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.answers_answer_id_seq OWNED BY public.answers.answer_id;

CREATE TABLE public.batches (
    iteration integer NOT NULL,
    status text NOT NULL,
    crowd text,
    created_at text NOT NULL,
    published_at text,
    collected_at text,
    aggregated_at text,
    CONSTRAINT batches_status_check CHECK ((status = ANY (ARRAY['built'::text, 'published'::text, 'collected'::text, 'aggregated'::text])))
);

CREATE TABLE public.candidates (
    query text NOT NULL,
    document text NOT NULL,
    audio text,
    seconds double precision,
    "position" integer NOT NULL,
    prior double precision
);

CREATE TABLE public.hits (
    crowd text NOT NULL,
    pair_id integer NOT NULL,
    hit_id text NOT NULL,
    max_assignments integer NOT NULL,
    created_at text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    reward double precision,
    fee_rate double precision,
    fee_rate_10_or_more double precision,
    fee_minimum double precision
);

CREATE TABLE public.machine_verdicts (
    query text NOT NULL,
    x text NOT NULL,
    y text NOT NULL,
    iteration integer NOT NULL,
    verdict integer NOT NULL,
    probability double precision NOT NULL,
    asked integer NOT NULL,
    CONSTRAINT machine_verdicts_asked_check CHECK ((asked = ANY (ARRAY[0, 1]))),
    CONSTRAINT machine_verdicts_verdict_check CHECK ((verdict = ANY (ARRAY['-1'::integer, 0, 1])))
);

CREATE TABLE public.meta (
    key text NOT NULL,
    value text NOT NULL
);

CREATE TABLE public.pair_counts (
    pair_id integer NOT NULL,
    more integer NOT NULL,
    equal integer NOT NULL,
    less integer NOT NULL
);

CREATE TABLE public.pairs (
    pair_id integer NOT NULL,
    iteration integer NOT NULL,
    query text NOT NULL,
    x text NOT NULL,
    y text NOT NULL,
    a_is_x integer NOT NULL,
    "position" integer NOT NULL,
    kind text DEFAULT 'sort'::text NOT NULL,
    expected integer,
    answers_wanted integer NOT NULL,
    verdict integer,
    p_value double precision,
    CONSTRAINT pairs_a_is_x_check CHECK ((a_is_x = ANY (ARRAY[0, 1]))),
    CONSTRAINT pairs_answers_wanted_check CHECK ((answers_wanted > 0)),
    CONSTRAINT pairs_expected_check CHECK ((expected = ANY (ARRAY['-1'::integer, 0, 1]))),
    CONSTRAINT pairs_kind_check CHECK ((kind = ANY (ARRAY['sort'::text, 'check'::text]))),
    CONSTRAINT pairs_verdict_check CHECK ((verdict = ANY (ARRAY['-1'::integer, 0, 1])))
)
WITH (fillfactor='50');

CREATE SEQUENCE public.pairs_pair_id_seq
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.pairs_pair_id_seq OWNED BY public.pairs.pair_id;

CREATE TABLE public.prolific_bonus_lines (
    bonus_id text NOT NULL,
    participant_id text NOT NULL,
    amount integer NOT NULL,
    CONSTRAINT prolific_bonus_lines_amount_check CHECK ((amount > 0))
);

CREATE TABLE public.prolific_bonuses (
    bonus_id text NOT NULL,
    study_id text NOT NULL,
    amount integer NOT NULL,
    fee_rate double precision NOT NULL,
    created_at text NOT NULL,
    paid_at text,
    CONSTRAINT prolific_bonuses_amount_check CHECK ((amount > 0))
);

CREATE TABLE public.prolific_events (
    event_id text NOT NULL,
    event_type text NOT NULL,
    resource_id text NOT NULL,
    status text,
    participant_id text,
    event_at double precision NOT NULL,
    received_at text NOT NULL,
    applied_at text
);

CREATE TABLE public.prolific_reviews (
    submission_id text NOT NULL,
    study_id text NOT NULL,
    participant_id text NOT NULL,
    decision text NOT NULL,
    category text,
    message text,
    decided_at text NOT NULL,
    applied_at text,
    CONSTRAINT prolific_reviews_decision_check CHECK ((decision = ANY (ARRAY['approve'::text, 'reject'::text])))
);

CREATE TABLE public.prolific_studies (
    study_id text NOT NULL,
    created_at text NOT NULL,
    reward integer NOT NULL,
    currency text NOT NULL,
    minutes integer NOT NULL,
    questions integer NOT NULL,
    fee_rate double precision NOT NULL,
    completion_code text NOT NULL,
    places integer NOT NULL,
    status text NOT NULL,
    published_at text,
    CONSTRAINT prolific_studies_minutes_check CHECK ((minutes > 0)),
    CONSTRAINT prolific_studies_questions_check CHECK ((questions > 0)),
    CONSTRAINT prolific_studies_reward_check CHECK ((reward > 0))
);

CREATE TABLE public.queries (
    query text NOT NULL,
    audio text,
    seconds double precision,
    "position" integer
);

CREATE TABLE public.sort_cache (
    query text NOT NULL,
    fingerprint text NOT NULL,
    state text NOT NULL
);

CREATE TABLE public.web_assignments (
    assignment_id text NOT NULL,
    pair_id integer NOT NULL,
    judge_id text NOT NULL,
    csrf text NOT NULL,
    issued_at text NOT NULL,
    expires_at text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    CONSTRAINT web_assignments_status_check CHECK ((status = ANY (ARRAY['open'::text, 'submitted'::text, 'released'::text])))
);

CREATE TABLE public.web_judges (
    judge_id text NOT NULL,
    token_hash text NOT NULL,
    source text NOT NULL,
    participant text,
    completion_code text NOT NULL,
    created_at text NOT NULL,
    left_at text,
    CONSTRAINT web_judges_source_check CHECK ((source = ANY (ARRAY['invite'::text, 'platform'::text])))
);

CREATE TABLE public.web_screens (
    judge_id text NOT NULL,
    seed integer NOT NULL,
    trials integer NOT NULL,
    pass_mark integer NOT NULL,
    csrf text NOT NULL,
    started_at text NOT NULL,
    answers text,
    correct integer,
    passed integer,
    finished_at text,
    CONSTRAINT web_screens_pass_mark_check CHECK ((pass_mark > 0)),
    CONSTRAINT web_screens_passed_check CHECK ((passed = ANY (ARRAY[0, 1]))),
    CONSTRAINT web_screens_trials_check CHECK ((trials > 0))
);

CREATE TABLE public.web_throttle (
    party text NOT NULL,
    token_sha text NOT NULL,
    failed_at double precision NOT NULL
);

CREATE TABLE public.worker_blocks (
    crowd text NOT NULL,
    worker_id text NOT NULL,
    reason text NOT NULL,
    decided_at text NOT NULL,
    applied_at text
);

ALTER TABLE ONLY public.answers ALTER COLUMN answer_id SET DEFAULT nextval('public.answers_answer_id_seq'::regclass);

ALTER TABLE ONLY public.pairs ALTER COLUMN pair_id SET DEFAULT nextval('public.pairs_pair_id_seq'::regclass);

INSERT INTO public.answers VALUES (1, 6, 'simulated', 'sim-6-0', 'W0110041', 'equal', 0, 32.2, '2026-11-29T15:38:23.036+00:00', '2026-11-29T15:38:55.219+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (2, 6, 'simulated', 'sim-6-1', 'W0110004', 'equal', 0, 34.2, '2026-11-29T12:49:07.391+00:00', '2026-11-29T12:49:41.580+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (3, 6, 'simulated', 'sim-6-2', 'W0110039', 'equal', 0, 79.6, '2026-11-29T14:59:56.568+00:00', '2026-11-29T15:01:16.197+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (4, 6, 'simulated', 'sim-6-3', 'W0110006', 'equal', 0, 66.7, '2026-11-29T15:32:36.916+00:00', '2026-11-29T15:33:43.581+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (5, 6, 'simulated', 'sim-6-4', 'W0110000', 'equal', 0, 10, '2026-11-29T15:30:31.189+00:00', '2026-11-29T15:30:41.180+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (6, 6, 'simulated', 'sim-6-5', 'W0110058', 'equal', 0, 39.3, '2026-11-29T13:03:22.992+00:00', '2026-11-29T13:04:02.328+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (7, 6, 'simulated', 'sim-6-6', 'W0110022', 'equal', 0, 12.5, '2026-11-29T14:57:02.092+00:00', '2026-11-29T14:57:14.640+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (8, 6, 'simulated', 'sim-6-7', 'W0110013', 'equal', 0, 8, '2026-11-29T14:34:46.263+00:00', '2026-11-29T14:34:54.263+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (9, 6, 'simulated', 'sim-6-8', 'W0110005', 'B', -1, 25.3, '2026-11-29T14:41:02.688+00:00', '2026-11-29T14:41:27.982+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (10, 6, 'simulated', 'sim-6-9', 'W0110012', 'equal', 0, 88.9, '2026-11-29T13:44:09.822+00:00', '2026-11-29T13:45:38.704+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (11, 4, 'simulated', 'sim-4-0', 'W0110007', 'equal', 0, 18.4, '2026-11-29T13:18:06.035+00:00', '2026-11-29T13:18:24.421+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (12, 4, 'simulated', 'sim-4-1', 'W0110056', 'equal', 0, 19.8, '2026-11-29T15:20:14.871+00:00', '2026-11-29T15:20:34.636+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (13, 4, 'simulated', 'sim-4-2', 'W0110000', 'equal', 0, 45.6, '2026-11-29T13:28:29.527+00:00', '2026-11-29T13:29:15.148+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (14, 4, 'simulated', 'sim-4-3', 'W0110061', 'B', -1, 43.2, '2026-11-29T12:58:20.451+00:00', '2026-11-29T12:59:03.700+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (15, 4, 'simulated', 'sim-4-4', 'W0110030', 'equal', 0, 9.6, '2026-11-29T15:29:12.874+00:00', '2026-11-29T15:29:22.499+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (16, 4, 'simulated', 'sim-4-5', 'W0110005', 'equal', 0, 32.6, '2026-11-29T14:06:51.623+00:00', '2026-11-29T14:07:24.268+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (17, 4, 'simulated', 'sim-4-6', 'W0110003', 'equal', 0, 26.2, '2026-11-29T13:59:01.873+00:00', '2026-11-29T13:59:28.071+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (18, 4, 'simulated', 'sim-4-7', 'W0110034', 'equal', 0, 10.9, '2026-11-29T15:17:13.209+00:00', '2026-11-29T15:17:24.130+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (19, 4, 'simulated', 'sim-4-8', 'W0110020', 'equal', 0, 31.6, '2026-11-29T13:48:35.514+00:00', '2026-11-29T13:49:07.075+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (20, 4, 'simulated', 'sim-4-9', 'W0110036', 'equal', 0, 51.8, '2026-11-29T14:30:22.160+00:00', '2026-11-29T14:31:13.970+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (21, 5, 'simulated', 'sim-5-0', 'W0110019', 'equal', 0, 15.1, '2026-11-29T14:39:57.748+00:00', '2026-11-29T14:40:12.808+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (22, 5, 'simulated', 'sim-5-1', 'W0110001', 'B', 1, 20.6, '2026-11-29T14:56:03.105+00:00', '2026-11-29T14:56:23.722+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (23, 5, 'simulated', 'sim-5-2', 'W0110002', 'equal', 0, 10.8, '2026-11-29T15:01:19.128+00:00', '2026-11-29T15:01:29.965+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (24, 5, 'simulated', 'sim-5-3', 'W0110028', 'equal', 0, 46.1, '2026-11-29T13:24:58.388+00:00', '2026-11-29T13:25:44.444+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (25, 5, 'simulated', 'sim-5-4', 'W0110030', 'equal', 0, 8.4, '2026-11-29T13:18:00.691+00:00', '2026-11-29T13:18:09.127+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (26, 5, 'simulated', 'sim-5-5', 'W0110072', 'B', 1, 10.5, '2026-11-29T12:58:59.948+00:00', '2026-11-29T12:59:10.446+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (27, 5, 'simulated', 'sim-5-6', 'W0110015', 'B', 1, 34.3, '2026-11-29T13:50:17.426+00:00', '2026-11-29T13:50:51.699+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (28, 5, 'simulated', 'sim-5-7', 'W0110016', 'equal', 0, 7, '2026-11-29T13:14:39.350+00:00', '2026-11-29T13:14:46.355+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (29, 5, 'simulated', 'sim-5-8', 'W0110004', 'equal', 0, 24.7, '2026-11-29T14:55:13.349+00:00', '2026-11-29T14:55:38.088+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (30, 5, 'simulated', 'sim-5-9', 'W0110000', 'equal', 0, 8.9, '2026-11-29T14:45:40.125+00:00', '2026-11-29T14:45:49.010+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (31, 2, 'simulated', 'sim-2-0', 'W0110000', 'equal', 0, 24, '2026-11-29T13:25:08.393+00:00', '2026-11-29T13:25:32.358+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (32, 2, 'simulated', 'sim-2-1', 'W0110009', 'equal', 0, 10, '2026-11-29T14:28:47.750+00:00', '2026-11-29T14:28:57.769+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (33, 2, 'simulated', 'sim-2-2', 'W0110010', 'B', -1, 24.2, '2026-11-29T15:45:04.446+00:00', '2026-11-29T15:45:28.632+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (34, 2, 'simulated', 'sim-2-3', 'W0110079', 'equal', 0, 15.6, '2026-11-29T13:19:49.202+00:00', '2026-11-29T13:20:04.752+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (35, 2, 'simulated', 'sim-2-4', 'W0110054', 'B', -1, 17.5, '2026-11-29T13:54:37.533+00:00', '2026-11-29T13:54:55.038+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (36, 2, 'simulated', 'sim-2-5', 'W0110015', 'equal', 0, 35.3, '2026-11-29T14:12:47.183+00:00', '2026-11-29T14:13:22.524+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (37, 2, 'simulated', 'sim-2-6', 'W0110061', 'equal', 0, 33, '2026-11-29T14:37:39.789+00:00', '2026-11-29T14:38:12.787+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (38, 2, 'simulated', 'sim-2-7', 'W0110019', 'equal', 0, 16.5, '2026-11-29T15:30:24.568+00:00', '2026-11-29T15:30:41.068+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (39, 2, 'simulated', 'sim-2-8', 'W0110001', 'A', 1, 23.3, '2026-11-29T14:11:08.246+00:00', '2026-11-29T14:11:31.523+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (40, 2, 'simulated', 'sim-2-9', 'W0110002', 'A', 1, 22.7, '2026-11-29T13:23:55.385+00:00', '2026-11-29T13:24:18.087+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (41, 1, 'simulated', 'sim-1-0', 'W0110000', 'equal', 0, 23, '2026-11-29T14:39:08.759+00:00', '2026-11-29T14:39:31.735+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (42, 1, 'simulated', 'sim-1-1', 'W0110072', 'equal', 0, 5.2, '2026-11-29T13:11:57.917+00:00', '2026-11-29T13:12:03.121+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (43, 1, 'simulated', 'sim-1-2', 'W0110006', 'equal', 0, 32.5, '2026-11-29T13:57:45.792+00:00', '2026-11-29T13:58:18.301+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (44, 1, 'simulated', 'sim-1-3', 'W0110021', 'A', 1, 14.3, '2026-11-29T13:44:00.536+00:00', '2026-11-29T13:44:14.851+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (45, 1, 'simulated', 'sim-1-4', 'W0110001', 'equal', 0, 21.2, '2026-11-29T15:03:39.687+00:00', '2026-11-29T15:04:00.861+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (46, 1, 'simulated', 'sim-1-5', 'W0110064', 'equal', 0, 26.1, '2026-11-29T13:02:11.708+00:00', '2026-11-29T13:02:37.769+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (47, 1, 'simulated', 'sim-1-6', 'W0110057', 'equal', 0, 28.1, '2026-11-29T15:46:10.347+00:00', '2026-11-29T15:46:38.419+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (48, 1, 'simulated', 'sim-1-7', 'W0110035', 'equal', 0, 15.6, '2026-11-29T13:27:44.620+00:00', '2026-11-29T13:28:00.228+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (49, 1, 'simulated', 'sim-1-8', 'W0110004', 'equal', 0, 24.8, '2026-11-29T13:44:10.660+00:00', '2026-11-29T13:44:35.460+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (50, 1, 'simulated', 'sim-1-9', 'W0110007', 'equal', 0, 12.2, '2026-11-29T13:13:24.754+00:00', '2026-11-29T13:13:36.921+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (51, 3, 'simulated', 'sim-3-0', 'W0110047', 'equal', 0, 33.5, '2026-11-29T13:46:55.801+00:00', '2026-11-29T13:47:29.317+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (52, 3, 'simulated', 'sim-3-1', 'W0110050', 'equal', 0, 43.3, '2026-11-29T14:26:39.262+00:00', '2026-11-29T14:27:22.540+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (53, 3, 'simulated', 'sim-3-2', 'W0110007', 'equal', 0, 13, '2026-11-29T14:20:35.137+00:00', '2026-11-29T14:20:48.091+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (54, 3, 'simulated', 'sim-3-3', 'W0110055', 'equal', 0, 21.6, '2026-11-29T13:42:12.842+00:00', '2026-11-29T13:42:34.393+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (55, 3, 'simulated', 'sim-3-4', 'W0110008', 'B', -1, 19.3, '2026-11-29T12:48:03.616+00:00', '2026-11-29T12:48:22.873+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (56, 3, 'simulated', 'sim-3-5', 'W0110003', 'B', -1, 21.2, '2026-11-29T12:54:36.921+00:00', '2026-11-29T12:54:58.100+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (57, 3, 'simulated', 'sim-3-6', 'W0110077', 'equal', 0, 13.8, '2026-11-29T15:10:30.114+00:00', '2026-11-29T15:10:43.872+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (58, 3, 'simulated', 'sim-3-7', 'W0110019', 'equal', 0, 36.6, '2026-11-29T13:59:52.477+00:00', '2026-11-29T14:00:29.092+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (59, 3, 'simulated', 'sim-3-8', 'W0110000', 'equal', 0, 18.1, '2026-11-29T13:05:18.730+00:00', '2026-11-29T13:05:36.826+00:00', NULL, NULL, NULL, 'submitted');
INSERT INTO public.answers VALUES (60, 3, 'simulated', 'sim-3-9', 'W0110071', 'equal', 0, 18.7, '2026-11-29T13:42:16.181+00:00', '2026-11-29T13:42:34.898+00:00', NULL, NULL, NULL, 'submitted');

INSERT INTO public.batches VALUES (1, 'aggregated', 'simulated', '2026-11-29T12:48:02.372+00:00', '2026-11-29T12:48:02.439+00:00', '2026-11-29T12:48:02.555+00:00', '2026-11-29T12:48:02.608+00:00');

INSERT INTO public.candidates VALUES ('q1', 'a', NULL, NULL, 0, NULL);
INSERT INTO public.candidates VALUES ('q1', 'b', NULL, NULL, 1, NULL);
INSERT INTO public.candidates VALUES ('q1', 'c', NULL, NULL, 2, NULL);
INSERT INTO public.candidates VALUES ('q1', 'd', NULL, NULL, 3, NULL);
INSERT INTO public.candidates VALUES ('q2', 'b', NULL, NULL, 4, NULL);
INSERT INTO public.candidates VALUES ('q2', 'c', NULL, NULL, 5, NULL);
INSERT INTO public.candidates VALUES ('q2', 'd', NULL, NULL, 6, NULL);
INSERT INTO public.candidates VALUES ('q2', 'e', NULL, NULL, 7, NULL);

INSERT INTO public.hits VALUES ('simulated', 6, 'simulated-6', 10, '2026-11-29T12:48:02.404+00:00', 'open', 0.02, 0.2, 0.4, 0.01);
INSERT INTO public.hits VALUES ('simulated', 4, 'simulated-4', 10, '2026-11-29T12:48:02.404+00:00', 'open', 0.02, 0.2, 0.4, 0.01);
INSERT INTO public.hits VALUES ('simulated', 5, 'simulated-5', 10, '2026-11-29T12:48:02.404+00:00', 'open', 0.02, 0.2, 0.4, 0.01);
INSERT INTO public.hits VALUES ('simulated', 2, 'simulated-2', 10, '2026-11-29T12:48:02.404+00:00', 'open', 0.02, 0.2, 0.4, 0.01);
INSERT INTO public.hits VALUES ('simulated', 1, 'simulated-1', 10, '2026-11-29T12:48:02.404+00:00', 'open', 0.02, 0.2, 0.4, 0.01);
INSERT INTO public.hits VALUES ('simulated', 3, 'simulated-3', 10, '2026-11-29T12:48:02.404+00:00', 'open', 0.02, 0.2, 0.4, 0.01);

INSERT INTO public.meta VALUES ('schema_version', '15');
INSERT INTO public.meta VALUES ('seed', '11');
INSERT INTO public.meta VALUES ('created_at', '2026-11-29T12:48:02.188+00:00');
INSERT INTO public.meta VALUES ('settings_at_next', '{"aggregation": {"alpha": 0.05, "continuity": true, "margin": 2, "method": "asymptotic", "rule": "mann-whitney", "sided": "two-sided", "ties": "davidson"}, "crowd": {"answers_per_pair": 10, "reward": 0.02}, "fees": {"minimum": 0.01, "rate": 0.2, "rate_10_or_more": 0.4}, "project": {"seed": 11}, "store": {"url": "postgresql://postgres@/mainmade?host=/tmp/pgmain/srv"}}');

INSERT INTO public.pair_counts VALUES (4, 0, 9, 1);
INSERT INTO public.pair_counts VALUES (6, 0, 9, 1);
INSERT INTO public.pair_counts VALUES (2, 2, 6, 2);
INSERT INTO public.pair_counts VALUES (3, 0, 8, 2);
INSERT INTO public.pair_counts VALUES (1, 1, 9, 0);
INSERT INTO public.pair_counts VALUES (5, 3, 7, 0);

INSERT INTO public.pairs VALUES (1, 1, 'q1', 'c', 'a', 1, 4, 'sort', NULL, 10, 0, 0.19160110675259334);
INSERT INTO public.pairs VALUES (2, 1, 'q1', 'b', 'a', 1, 3, 'sort', NULL, 10, 0, 1);
INSERT INTO public.pairs VALUES (3, 1, 'q1', 'd', 'a', 1, 5, 'sort', NULL, 10, 0, 0.058064584335065145);
INSERT INTO public.pairs VALUES (4, 1, 'q2', 'c', 'd', 1, 1, 'sort', NULL, 10, 0, 0.19160110675259334);
INSERT INTO public.pairs VALUES (5, 1, 'q2', 'e', 'd', 0, 2, 'sort', NULL, 10, 1, 0.019249987667581427);
INSERT INTO public.pairs VALUES (6, 1, 'q2', 'b', 'd', 1, 0, 'sort', NULL, 10, 0, 0.19160110675259334);

INSERT INTO public.prolific_studies VALUES ('S1', '2026-01-01T00:00:00.000Z', 150, 'GBP', 10, 20, 0.333, 'C0DE', 5, 'UNPUBLISHED', NULL);

INSERT INTO public.queries VALUES ('q1', NULL, NULL, 0);
INSERT INTO public.queries VALUES ('q2', NULL, NULL, 4);

INSERT INTO public.sort_cache VALUES ('q1', '3:12', '{"segments":[[["a"],["c","b","d"],[0,1]]],"rounds":1}');
INSERT INTO public.sort_cache VALUES ('q2', '3:35', '{"segments":[[[],["e"],[]],[["d"],["c","b"],[0]]],"rounds":1}');

INSERT INTO public.web_judges VALUES ('J0001', '0000000000000000000000000000000000000000000000000000000000000000', 'invite', NULL, 'CODE1', '2026-01-01T00:00:00.000Z', NULL);
INSERT INTO public.web_judges VALUES ('J0002', '1111111111111111111111111111111111111111111111111111111111111111', 'invite', NULL, 'CODE2', '2026-01-01T00:00:00.000Z', NULL);

SELECT pg_catalog.setval('public.answers_answer_id_seq', 60, true);

SELECT pg_catalog.setval('public.pairs_pair_id_seq', 6, true);

ALTER TABLE ONLY public.answer_reviews
    ADD CONSTRAINT answer_reviews_pkey PRIMARY KEY (crowd, assignment_id);

ALTER TABLE ONLY public.answers
    ADD CONSTRAINT answers_crowd_assignment_id_key UNIQUE (crowd, assignment_id);

ALTER TABLE ONLY public.answers
    ADD CONSTRAINT answers_pkey PRIMARY KEY (answer_id);

ALTER TABLE ONLY public.batches
    ADD CONSTRAINT batches_pkey PRIMARY KEY (iteration);

ALTER TABLE ONLY public.candidates
    ADD CONSTRAINT candidates_pkey PRIMARY KEY (query, document);

ALTER TABLE ONLY public.hits
    ADD CONSTRAINT hits_crowd_hit_id_key UNIQUE (crowd, hit_id);

ALTER TABLE ONLY public.hits
    ADD CONSTRAINT hits_pkey PRIMARY KEY (crowd, pair_id);

ALTER TABLE ONLY public.machine_verdicts
    ADD CONSTRAINT machine_verdicts_pkey PRIMARY KEY (query, x, y);

ALTER TABLE ONLY public.meta
    ADD CONSTRAINT meta_pkey PRIMARY KEY (key);

ALTER TABLE ONLY public.pair_counts
    ADD CONSTRAINT pair_counts_pkey PRIMARY KEY (pair_id);

ALTER TABLE ONLY public.pairs
    ADD CONSTRAINT pairs_iteration_query_x_y_key UNIQUE (iteration, query, x, y);

ALTER TABLE ONLY public.pairs
    ADD CONSTRAINT pairs_pkey PRIMARY KEY (pair_id);

ALTER TABLE ONLY public.prolific_bonus_lines
    ADD CONSTRAINT prolific_bonus_lines_pkey PRIMARY KEY (bonus_id, participant_id);

ALTER TABLE ONLY public.prolific_bonuses
    ADD CONSTRAINT prolific_bonuses_pkey PRIMARY KEY (bonus_id);

ALTER TABLE ONLY public.prolific_events
    ADD CONSTRAINT prolific_events_pkey PRIMARY KEY (event_id);

ALTER TABLE ONLY public.prolific_reviews
    ADD CONSTRAINT prolific_reviews_pkey PRIMARY KEY (submission_id);

ALTER TABLE ONLY public.prolific_studies
    ADD CONSTRAINT prolific_studies_pkey PRIMARY KEY (study_id);

ALTER TABLE ONLY public.queries
    ADD CONSTRAINT queries_pkey PRIMARY KEY (query);

ALTER TABLE ONLY public.sort_cache
    ADD CONSTRAINT sort_cache_pkey PRIMARY KEY (query);

ALTER TABLE ONLY public.web_assignments
    ADD CONSTRAINT web_assignments_pair_id_judge_id_key UNIQUE (pair_id, judge_id);

ALTER TABLE ONLY public.web_assignments
    ADD CONSTRAINT web_assignments_pkey PRIMARY KEY (assignment_id);

ALTER TABLE ONLY public.web_judges
    ADD CONSTRAINT web_judges_participant_key UNIQUE (participant);

ALTER TABLE ONLY public.web_judges
    ADD CONSTRAINT web_judges_pkey PRIMARY KEY (judge_id);

ALTER TABLE ONLY public.web_judges
    ADD CONSTRAINT web_judges_token_hash_key UNIQUE (token_hash);

ALTER TABLE ONLY public.web_screens
    ADD CONSTRAINT web_screens_pkey PRIMARY KEY (judge_id);

ALTER TABLE ONLY public.web_throttle
    ADD CONSTRAINT web_throttle_pkey PRIMARY KEY (party, token_sha);

ALTER TABLE ONLY public.worker_blocks
    ADD CONSTRAINT worker_blocks_pkey PRIMARY KEY (crowd, worker_id);

CREATE INDEX answers_by_pair_status_score ON public.answers USING btree (pair_id, status, score);

CREATE INDEX answers_by_status ON public.answers USING btree (status);

CREATE INDEX hits_by_price ON public.hits USING btree (max_assignments, reward, fee_rate, fee_rate_10_or_more, fee_minimum);

CREATE INDEX pairs_by_query_kind ON public.pairs USING btree (query, kind, iteration);

CREATE INDEX prolific_events_by_resource ON public.prolific_events USING btree (resource_id, event_at);

CREATE INDEX web_assignments_by_judge ON public.web_assignments USING btree (judge_id, status);

CREATE INDEX web_assignments_by_status ON public.web_assignments USING btree (status, pair_id);

ALTER TABLE ONLY public.answer_reviews
    ADD CONSTRAINT answer_reviews_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES public.pairs(pair_id);

ALTER TABLE ONLY public.answers
    ADD CONSTRAINT answers_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES public.pairs(pair_id);

ALTER TABLE ONLY public.candidates
    ADD CONSTRAINT candidates_query_fkey FOREIGN KEY (query) REFERENCES public.queries(query);

ALTER TABLE ONLY public.hits
    ADD CONSTRAINT hits_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES public.pairs(pair_id);

ALTER TABLE ONLY public.machine_verdicts
    ADD CONSTRAINT machine_verdicts_query_fkey FOREIGN KEY (query) REFERENCES public.queries(query);

ALTER TABLE ONLY public.pair_counts
    ADD CONSTRAINT pair_counts_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES public.pairs(pair_id);

ALTER TABLE ONLY public.pairs
    ADD CONSTRAINT pairs_iteration_fkey FOREIGN KEY (iteration) REFERENCES public.batches(iteration);

ALTER TABLE ONLY public.pairs
    ADD CONSTRAINT pairs_query_fkey FOREIGN KEY (query) REFERENCES public.queries(query);

ALTER TABLE ONLY public.prolific_bonus_lines
    ADD CONSTRAINT prolific_bonus_lines_bonus_id_fkey FOREIGN KEY (bonus_id) REFERENCES public.prolific_bonuses(bonus_id);

ALTER TABLE ONLY public.prolific_bonuses
    ADD CONSTRAINT prolific_bonuses_study_id_fkey FOREIGN KEY (study_id) REFERENCES public.prolific_studies(study_id);

ALTER TABLE ONLY public.prolific_reviews
    ADD CONSTRAINT prolific_reviews_study_id_fkey FOREIGN KEY (study_id) REFERENCES public.prolific_studies(study_id);

ALTER TABLE ONLY public.sort_cache
    ADD CONSTRAINT sort_cache_query_fkey FOREIGN KEY (query) REFERENCES public.queries(query);

ALTER TABLE ONLY public.web_assignments
    ADD CONSTRAINT web_assignments_judge_id_fkey FOREIGN KEY (judge_id) REFERENCES public.web_judges(judge_id);

ALTER TABLE ONLY public.web_assignments
    ADD CONSTRAINT web_assignments_pair_id_fkey FOREIGN KEY (pair_id) REFERENCES public.pairs(pair_id);

ALTER TABLE ONLY public.web_screens
    ADD CONSTRAINT web_screens_judge_id_fkey FOREIGN KEY (judge_id) REFERENCES public.web_judges(judge_id);

