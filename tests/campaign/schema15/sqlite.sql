BEGIN TRANSACTION;
CREATE TABLE answer_reviews (
	crowd TEXT NOT NULL, 
	assignment_id TEXT NOT NULL, 
	pair_id INTEGER NOT NULL, 
	worker_id TEXT NOT NULL, 
	decision TEXT NOT NULL, 
	reason TEXT, 
	decided_at TEXT NOT NULL, 
	applied_at TEXT, 
	PRIMARY KEY (crowd, assignment_id), 
	CHECK (decision IN ('approve', 'reject', 'drop')), 
	FOREIGN KEY(pair_id) REFERENCES pairs (pair_id)
);
CREATE TABLE answers (
	answer_id INTEGER NOT NULL, 
	pair_id INTEGER NOT NULL, 
	crowd TEXT NOT NULL, 
	assignment_id TEXT NOT NULL, 
	worker_id TEXT NOT NULL, 
	choice TEXT NOT NULL, 
	score INTEGER NOT NULL, 
	seconds FLOAT, 
	accepted_at TEXT, 
	submitted_at TEXT, 
	background TEXT, 
	comment TEXT, 
	raw TEXT, 
	status TEXT DEFAULT 'submitted' NOT NULL, 
	PRIMARY KEY (answer_id), 
	UNIQUE (crowd, assignment_id), 
	CHECK (choice IN ('A', 'B', 'equal')), 
	CHECK (score IN (-1, 0, 1)), 
	CHECK (status IN ('submitted', 'approved', 'rejected')), 
	FOREIGN KEY(pair_id) REFERENCES pairs (pair_id)
);
INSERT INTO "answers" VALUES(1,6,'simulated','sim-6-0','W0110041','equal',0,32.2,'2026-11-29T15:38:21.982+00:00','2026-11-29T15:38:54.165+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(2,6,'simulated','sim-6-1','W0110004','equal',0,34.2,'2026-11-29T12:49:06.337+00:00','2026-11-29T12:49:40.526+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(3,6,'simulated','sim-6-2','W0110039','equal',0,79.6,'2026-11-29T14:59:55.514+00:00','2026-11-29T15:01:15.143+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(4,6,'simulated','sim-6-3','W0110006','equal',0,66.7,'2026-11-29T15:32:35.862+00:00','2026-11-29T15:33:42.527+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(5,6,'simulated','sim-6-4','W0110000','equal',0,10.0,'2026-11-29T15:30:30.135+00:00','2026-11-29T15:30:40.126+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(6,6,'simulated','sim-6-5','W0110058','equal',0,39.3,'2026-11-29T13:03:21.938+00:00','2026-11-29T13:04:01.274+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(7,6,'simulated','sim-6-6','W0110022','equal',0,12.5,'2026-11-29T14:57:01.038+00:00','2026-11-29T14:57:13.586+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(8,6,'simulated','sim-6-7','W0110013','equal',0,8.0,'2026-11-29T14:34:45.209+00:00','2026-11-29T14:34:53.209+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(9,6,'simulated','sim-6-8','W0110005','B',-1,25.3,'2026-11-29T14:41:01.634+00:00','2026-11-29T14:41:26.928+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(10,6,'simulated','sim-6-9','W0110012','equal',0,88.9,'2026-11-29T13:44:08.768+00:00','2026-11-29T13:45:37.650+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(11,4,'simulated','sim-4-0','W0110007','equal',0,18.4,'2026-11-29T13:18:04.981+00:00','2026-11-29T13:18:23.367+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(12,4,'simulated','sim-4-1','W0110056','equal',0,19.8,'2026-11-29T15:20:13.817+00:00','2026-11-29T15:20:33.582+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(13,4,'simulated','sim-4-2','W0110000','equal',0,45.6,'2026-11-29T13:28:28.473+00:00','2026-11-29T13:29:14.094+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(14,4,'simulated','sim-4-3','W0110061','B',-1,43.2,'2026-11-29T12:58:19.397+00:00','2026-11-29T12:59:02.646+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(15,4,'simulated','sim-4-4','W0110030','equal',0,9.6,'2026-11-29T15:29:11.820+00:00','2026-11-29T15:29:21.445+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(16,4,'simulated','sim-4-5','W0110005','equal',0,32.6,'2026-11-29T14:06:50.569+00:00','2026-11-29T14:07:23.214+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(17,4,'simulated','sim-4-6','W0110003','equal',0,26.2,'2026-11-29T13:59:00.819+00:00','2026-11-29T13:59:27.017+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(18,4,'simulated','sim-4-7','W0110034','equal',0,10.9,'2026-11-29T15:17:12.155+00:00','2026-11-29T15:17:23.076+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(19,4,'simulated','sim-4-8','W0110020','equal',0,31.6,'2026-11-29T13:48:34.460+00:00','2026-11-29T13:49:06.021+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(20,4,'simulated','sim-4-9','W0110036','equal',0,51.8,'2026-11-29T14:30:21.106+00:00','2026-11-29T14:31:12.916+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(21,5,'simulated','sim-5-0','W0110019','equal',0,15.1,'2026-11-29T14:39:56.694+00:00','2026-11-29T14:40:11.754+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(22,5,'simulated','sim-5-1','W0110001','B',1,20.6,'2026-11-29T14:56:02.051+00:00','2026-11-29T14:56:22.668+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(23,5,'simulated','sim-5-2','W0110002','equal',0,10.8,'2026-11-29T15:01:18.074+00:00','2026-11-29T15:01:28.911+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(24,5,'simulated','sim-5-3','W0110028','equal',0,46.1,'2026-11-29T13:24:57.334+00:00','2026-11-29T13:25:43.390+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(25,5,'simulated','sim-5-4','W0110030','equal',0,8.4,'2026-11-29T13:17:59.637+00:00','2026-11-29T13:18:08.073+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(26,5,'simulated','sim-5-5','W0110072','B',1,10.5,'2026-11-29T12:58:58.894+00:00','2026-11-29T12:59:09.392+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(27,5,'simulated','sim-5-6','W0110015','B',1,34.3,'2026-11-29T13:50:16.372+00:00','2026-11-29T13:50:50.645+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(28,5,'simulated','sim-5-7','W0110016','equal',0,7.0,'2026-11-29T13:14:38.296+00:00','2026-11-29T13:14:45.301+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(29,5,'simulated','sim-5-8','W0110004','equal',0,24.7,'2026-11-29T14:55:12.295+00:00','2026-11-29T14:55:37.034+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(30,5,'simulated','sim-5-9','W0110000','equal',0,8.9,'2026-11-29T14:45:39.071+00:00','2026-11-29T14:45:47.956+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(31,2,'simulated','sim-2-0','W0110000','equal',0,24.0,'2026-11-29T13:25:07.339+00:00','2026-11-29T13:25:31.304+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(32,2,'simulated','sim-2-1','W0110009','equal',0,10.0,'2026-11-29T14:28:46.696+00:00','2026-11-29T14:28:56.715+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(33,2,'simulated','sim-2-2','W0110010','B',-1,24.2,'2026-11-29T15:45:03.392+00:00','2026-11-29T15:45:27.578+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(34,2,'simulated','sim-2-3','W0110079','equal',0,15.6,'2026-11-29T13:19:48.148+00:00','2026-11-29T13:20:03.698+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(35,2,'simulated','sim-2-4','W0110054','B',-1,17.5,'2026-11-29T13:54:36.479+00:00','2026-11-29T13:54:53.984+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(36,2,'simulated','sim-2-5','W0110015','equal',0,35.3,'2026-11-29T14:12:46.129+00:00','2026-11-29T14:13:21.470+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(37,2,'simulated','sim-2-6','W0110061','equal',0,33.0,'2026-11-29T14:37:38.735+00:00','2026-11-29T14:38:11.733+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(38,2,'simulated','sim-2-7','W0110019','equal',0,16.5,'2026-11-29T15:30:23.514+00:00','2026-11-29T15:30:40.014+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(39,2,'simulated','sim-2-8','W0110001','A',1,23.3,'2026-11-29T14:11:07.192+00:00','2026-11-29T14:11:30.469+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(40,2,'simulated','sim-2-9','W0110002','A',1,22.7,'2026-11-29T13:23:54.331+00:00','2026-11-29T13:24:17.033+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(41,1,'simulated','sim-1-0','W0110000','equal',0,23.0,'2026-11-29T14:39:07.705+00:00','2026-11-29T14:39:30.681+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(42,1,'simulated','sim-1-1','W0110072','equal',0,5.2,'2026-11-29T13:11:56.863+00:00','2026-11-29T13:12:02.067+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(43,1,'simulated','sim-1-2','W0110006','equal',0,32.5,'2026-11-29T13:57:44.738+00:00','2026-11-29T13:58:17.247+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(44,1,'simulated','sim-1-3','W0110021','A',1,14.3,'2026-11-29T13:43:59.482+00:00','2026-11-29T13:44:13.797+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(45,1,'simulated','sim-1-4','W0110001','equal',0,21.2,'2026-11-29T15:03:38.633+00:00','2026-11-29T15:03:59.807+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(46,1,'simulated','sim-1-5','W0110064','equal',0,26.1,'2026-11-29T13:02:10.654+00:00','2026-11-29T13:02:36.715+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(47,1,'simulated','sim-1-6','W0110057','equal',0,28.1,'2026-11-29T15:46:09.293+00:00','2026-11-29T15:46:37.365+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(48,1,'simulated','sim-1-7','W0110035','equal',0,15.6,'2026-11-29T13:27:43.566+00:00','2026-11-29T13:27:59.174+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(49,1,'simulated','sim-1-8','W0110004','equal',0,24.8,'2026-11-29T13:44:09.606+00:00','2026-11-29T13:44:34.406+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(50,1,'simulated','sim-1-9','W0110007','equal',0,12.2,'2026-11-29T13:13:23.700+00:00','2026-11-29T13:13:35.867+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(51,3,'simulated','sim-3-0','W0110047','equal',0,33.5,'2026-11-29T13:46:54.747+00:00','2026-11-29T13:47:28.263+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(52,3,'simulated','sim-3-1','W0110050','equal',0,43.3,'2026-11-29T14:26:38.208+00:00','2026-11-29T14:27:21.486+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(53,3,'simulated','sim-3-2','W0110007','equal',0,13.0,'2026-11-29T14:20:34.083+00:00','2026-11-29T14:20:47.037+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(54,3,'simulated','sim-3-3','W0110055','equal',0,21.6,'2026-11-29T13:42:11.788+00:00','2026-11-29T13:42:33.339+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(55,3,'simulated','sim-3-4','W0110008','B',-1,19.3,'2026-11-29T12:48:02.562+00:00','2026-11-29T12:48:21.819+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(56,3,'simulated','sim-3-5','W0110003','B',-1,21.2,'2026-11-29T12:54:35.867+00:00','2026-11-29T12:54:57.046+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(57,3,'simulated','sim-3-6','W0110077','equal',0,13.8,'2026-11-29T15:10:29.060+00:00','2026-11-29T15:10:42.818+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(58,3,'simulated','sim-3-7','W0110019','equal',0,36.6,'2026-11-29T13:59:51.423+00:00','2026-11-29T14:00:28.038+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(59,3,'simulated','sim-3-8','W0110000','equal',0,18.1,'2026-11-29T13:05:17.676+00:00','2026-11-29T13:05:35.772+00:00',NULL,NULL,NULL,'submitted');
INSERT INTO "answers" VALUES(60,3,'simulated','sim-3-9','W0110071','equal',0,18.7,'2026-11-29T13:42:15.127+00:00','2026-11-29T13:42:33.844+00:00',NULL,NULL,NULL,'submitted');
CREATE TABLE batches (
	iteration INTEGER NOT NULL, 
	status TEXT NOT NULL, 
	crowd TEXT, 
	created_at TEXT NOT NULL, 
	published_at TEXT, 
	collected_at TEXT, 
	aggregated_at TEXT, 
	PRIMARY KEY (iteration), 
	CHECK (status IN ('built', 'published', 'collected', 'aggregated'))
);
INSERT INTO "batches" VALUES(1,'aggregated','simulated','2026-11-29T12:48:01.323+00:00','2026-11-29T12:48:01.368+00:00','2026-11-29T12:48:01.453+00:00','2026-11-29T12:48:01.489+00:00');
CREATE TABLE candidates (
	"query" TEXT NOT NULL, 
	document TEXT NOT NULL, 
	audio TEXT, 
	seconds FLOAT, 
	position INTEGER NOT NULL, 
	prior FLOAT, 
	PRIMARY KEY ("query", document), 
	FOREIGN KEY("query") REFERENCES queries ("query")
);
INSERT INTO "candidates" VALUES('q1','a',NULL,NULL,0,NULL);
INSERT INTO "candidates" VALUES('q1','b',NULL,NULL,1,NULL);
INSERT INTO "candidates" VALUES('q1','c',NULL,NULL,2,NULL);
INSERT INTO "candidates" VALUES('q1','d',NULL,NULL,3,NULL);
INSERT INTO "candidates" VALUES('q2','b',NULL,NULL,4,NULL);
INSERT INTO "candidates" VALUES('q2','c',NULL,NULL,5,NULL);
INSERT INTO "candidates" VALUES('q2','d',NULL,NULL,6,NULL);
INSERT INTO "candidates" VALUES('q2','e',NULL,NULL,7,NULL);
CREATE TABLE hits (
	crowd TEXT NOT NULL, 
	pair_id INTEGER NOT NULL, 
	hit_id TEXT NOT NULL, 
	max_assignments INTEGER NOT NULL, 
	created_at TEXT NOT NULL, 
	status TEXT DEFAULT 'open' NOT NULL, 
	reward FLOAT, 
	fee_rate FLOAT, 
	fee_rate_10_or_more FLOAT, 
	fee_minimum FLOAT, 
	PRIMARY KEY (crowd, pair_id), 
	UNIQUE (crowd, hit_id), 
	FOREIGN KEY(pair_id) REFERENCES pairs (pair_id)
);
INSERT INTO "hits" VALUES('simulated',6,'simulated-6',10,'2026-11-29T12:48:01.350+00:00','open',0.02,0.2,0.4,0.01);
INSERT INTO "hits" VALUES('simulated',4,'simulated-4',10,'2026-11-29T12:48:01.350+00:00','open',0.02,0.2,0.4,0.01);
INSERT INTO "hits" VALUES('simulated',5,'simulated-5',10,'2026-11-29T12:48:01.350+00:00','open',0.02,0.2,0.4,0.01);
INSERT INTO "hits" VALUES('simulated',2,'simulated-2',10,'2026-11-29T12:48:01.350+00:00','open',0.02,0.2,0.4,0.01);
INSERT INTO "hits" VALUES('simulated',1,'simulated-1',10,'2026-11-29T12:48:01.350+00:00','open',0.02,0.2,0.4,0.01);
INSERT INTO "hits" VALUES('simulated',3,'simulated-3',10,'2026-11-29T12:48:01.350+00:00','open',0.02,0.2,0.4,0.01);
CREATE TABLE machine_verdicts (
	"query" TEXT NOT NULL, 
	x TEXT NOT NULL, 
	y TEXT NOT NULL, 
	iteration INTEGER NOT NULL, 
	verdict INTEGER NOT NULL, 
	probability FLOAT NOT NULL, 
	asked INTEGER NOT NULL, 
	PRIMARY KEY ("query", x, y), 
	CHECK (verdict IN (-1, 0, 1)), 
	CHECK (asked IN (0, 1)), 
	FOREIGN KEY("query") REFERENCES queries ("query")
);
CREATE TABLE meta (
	"key" TEXT NOT NULL, 
	value TEXT NOT NULL, 
	PRIMARY KEY ("key")
);
INSERT INTO "meta" VALUES('schema_version','15');
INSERT INTO "meta" VALUES('seed','11');
INSERT INTO "meta" VALUES('created_at','2026-11-29T12:48:00.585+00:00');
INSERT INTO "meta" VALUES('settings_at_next','{"aggregation": {"alpha": 0.05, "continuity": true, "margin": 2, "method": "asymptotic", "rule": "mann-whitney", "sided": "two-sided", "ties": "davidson"}, "crowd": {"answers_per_pair": 10, "reward": 0.02}, "fees": {"minimum": 0.01, "rate": 0.2, "rate_10_or_more": 0.4}, "project": {"seed": 11}}');
CREATE TABLE pair_counts (
	pair_id INTEGER NOT NULL, 
	more INTEGER NOT NULL, 
	equal INTEGER NOT NULL, 
	less INTEGER NOT NULL, 
	PRIMARY KEY (pair_id), 
	FOREIGN KEY(pair_id) REFERENCES pairs (pair_id)
);
INSERT INTO "pair_counts" VALUES(1,1,9,0);
INSERT INTO "pair_counts" VALUES(2,2,6,2);
INSERT INTO "pair_counts" VALUES(3,0,8,2);
INSERT INTO "pair_counts" VALUES(4,0,9,1);
INSERT INTO "pair_counts" VALUES(5,3,7,0);
INSERT INTO "pair_counts" VALUES(6,0,9,1);
CREATE TABLE pairs (
	pair_id INTEGER NOT NULL, 
	iteration INTEGER NOT NULL, 
	"query" TEXT NOT NULL, 
	x TEXT NOT NULL, 
	y TEXT NOT NULL, 
	a_is_x INTEGER NOT NULL, 
	position INTEGER NOT NULL, 
	kind TEXT DEFAULT 'sort' NOT NULL, 
	expected INTEGER, 
	answers_wanted INTEGER NOT NULL, 
	verdict INTEGER, 
	p_value FLOAT, 
	PRIMARY KEY (pair_id), 
	UNIQUE (iteration, "query", x, y), 
	CHECK (a_is_x IN (0, 1)), 
	CHECK (kind IN ('sort', 'check')), 
	CHECK (expected IN (-1, 0, 1)), 
	CHECK (verdict IN (-1, 0, 1)), 
	CHECK (answers_wanted > 0), 
	FOREIGN KEY(iteration) REFERENCES batches (iteration), 
	FOREIGN KEY("query") REFERENCES queries ("query")
);
INSERT INTO "pairs" VALUES(1,1,'q1','c','a',1,4,'sort',NULL,10,0,1.91601106752593342008e-01);
INSERT INTO "pairs" VALUES(2,1,'q1','b','a',1,3,'sort',NULL,10,0,1.0);
INSERT INTO "pairs" VALUES(3,1,'q1','d','a',1,5,'sort',NULL,10,0,5.80645843350651447156e-02);
INSERT INTO "pairs" VALUES(4,1,'q2','c','d',1,1,'sort',NULL,10,0,1.91601106752593342008e-01);
INSERT INTO "pairs" VALUES(5,1,'q2','e','d',0,2,'sort',NULL,10,1,1.92499876675814272919e-02);
INSERT INTO "pairs" VALUES(6,1,'q2','b','d',1,0,'sort',NULL,10,0,1.91601106752593342008e-01);
CREATE TABLE prolific_bonus_lines (
	bonus_id TEXT NOT NULL, 
	participant_id TEXT NOT NULL, 
	amount INTEGER NOT NULL, 
	PRIMARY KEY (bonus_id, participant_id), 
	CHECK (amount > 0), 
	FOREIGN KEY(bonus_id) REFERENCES prolific_bonuses (bonus_id)
);
CREATE TABLE prolific_bonuses (
	bonus_id TEXT NOT NULL, 
	study_id TEXT NOT NULL, 
	amount INTEGER NOT NULL, 
	fee_rate FLOAT NOT NULL, 
	created_at TEXT NOT NULL, 
	paid_at TEXT, 
	PRIMARY KEY (bonus_id), 
	CHECK (amount > 0), 
	FOREIGN KEY(study_id) REFERENCES prolific_studies (study_id)
);
CREATE TABLE prolific_events (
	event_id TEXT NOT NULL, 
	event_type TEXT NOT NULL, 
	resource_id TEXT NOT NULL, 
	status TEXT, 
	participant_id TEXT, 
	event_at FLOAT NOT NULL, 
	received_at TEXT NOT NULL, 
	applied_at TEXT, 
	PRIMARY KEY (event_id)
);
CREATE TABLE prolific_reviews (
	submission_id TEXT NOT NULL, 
	study_id TEXT NOT NULL, 
	participant_id TEXT NOT NULL, 
	decision TEXT NOT NULL, 
	category TEXT, 
	message TEXT, 
	decided_at TEXT NOT NULL, 
	applied_at TEXT, 
	PRIMARY KEY (submission_id), 
	CHECK (decision IN ('approve', 'reject')), 
	FOREIGN KEY(study_id) REFERENCES prolific_studies (study_id)
);
CREATE TABLE prolific_studies (
	study_id TEXT NOT NULL, 
	created_at TEXT NOT NULL, 
	reward INTEGER NOT NULL, 
	currency TEXT NOT NULL, 
	minutes INTEGER NOT NULL, 
	questions INTEGER NOT NULL, 
	fee_rate FLOAT NOT NULL, 
	completion_code TEXT NOT NULL, 
	places INTEGER NOT NULL, 
	status TEXT NOT NULL, 
	published_at TEXT, 
	PRIMARY KEY (study_id), 
	CHECK (reward > 0), 
	CHECK (minutes > 0), 
	CHECK (questions > 0)
);
INSERT INTO "prolific_studies" VALUES('S1','2026-01-01T00:00:00.000Z',150,'GBP',10,20,0.333,'C0DE',5,'UNPUBLISHED',NULL);
CREATE TABLE queries (
	"query" TEXT NOT NULL, 
	audio TEXT, 
	seconds FLOAT, 
	position INTEGER, 
	PRIMARY KEY ("query")
);
INSERT INTO "queries" VALUES('q1',NULL,NULL,0);
INSERT INTO "queries" VALUES('q2',NULL,NULL,4);
CREATE TABLE sort_cache (
	"query" TEXT NOT NULL, 
	fingerprint TEXT NOT NULL, 
	state TEXT NOT NULL, 
	PRIMARY KEY ("query"), 
	FOREIGN KEY("query") REFERENCES queries ("query")
);
INSERT INTO "sort_cache" VALUES('q1','3:12','{"segments":[[["a"],["c","b","d"],[0,1]]],"rounds":1}');
INSERT INTO "sort_cache" VALUES('q2','3:35','{"segments":[[[],["e"],[]],[["d"],["c","b"],[0]]],"rounds":1}');
CREATE TABLE web_assignments (
	assignment_id TEXT NOT NULL, 
	pair_id INTEGER NOT NULL, 
	judge_id TEXT NOT NULL, 
	csrf TEXT NOT NULL, 
	issued_at TEXT NOT NULL, 
	expires_at TEXT NOT NULL, 
	status TEXT DEFAULT 'open' NOT NULL, 
	PRIMARY KEY (assignment_id), 
	UNIQUE (pair_id, judge_id), 
	CHECK (status IN ('open', 'submitted', 'released')), 
	FOREIGN KEY(pair_id) REFERENCES pairs (pair_id), 
	FOREIGN KEY(judge_id) REFERENCES web_judges (judge_id)
);
CREATE TABLE web_judges (
	judge_id TEXT NOT NULL, 
	token_hash TEXT NOT NULL, 
	source TEXT NOT NULL, 
	participant TEXT, 
	completion_code TEXT NOT NULL, 
	created_at TEXT NOT NULL, 
	left_at TEXT, 
	PRIMARY KEY (judge_id), 
	CHECK (source IN ('invite', 'platform')), 
	UNIQUE (token_hash), 
	UNIQUE (participant)
);
INSERT INTO "web_judges" VALUES('J0001','0000000000000000000000000000000000000000000000000000000000000000','invite',NULL,'CODE1','2026-01-01T00:00:00.000Z',NULL);
INSERT INTO "web_judges" VALUES('J0002','1111111111111111111111111111111111111111111111111111111111111111','invite',NULL,'CODE2','2026-01-01T00:00:00.000Z',NULL);
CREATE TABLE web_screens (
	judge_id TEXT NOT NULL, 
	seed INTEGER NOT NULL, 
	trials INTEGER NOT NULL, 
	pass_mark INTEGER NOT NULL, 
	csrf TEXT NOT NULL, 
	started_at TEXT NOT NULL, 
	answers TEXT, 
	correct INTEGER, 
	passed INTEGER, 
	finished_at TEXT, 
	PRIMARY KEY (judge_id), 
	CHECK (trials > 0), 
	CHECK (pass_mark > 0), 
	CHECK (passed IN (0, 1)), 
	FOREIGN KEY(judge_id) REFERENCES web_judges (judge_id)
);
CREATE TABLE web_throttle (
	party TEXT NOT NULL, 
	token_sha TEXT NOT NULL, 
	failed_at FLOAT NOT NULL, 
	PRIMARY KEY (party, token_sha)
);
CREATE TABLE worker_blocks (
	crowd TEXT NOT NULL, 
	worker_id TEXT NOT NULL, 
	reason TEXT NOT NULL, 
	decided_at TEXT NOT NULL, 
	applied_at TEXT, 
	PRIMARY KEY (crowd, worker_id)
);
CREATE INDEX prolific_events_by_resource ON prolific_events (resource_id, event_at);
CREATE INDEX pairs_by_query_kind ON pairs ("query", kind, iteration);
CREATE INDEX hits_by_price ON hits (max_assignments, reward, fee_rate, fee_rate_10_or_more, fee_minimum);
CREATE INDEX answers_by_pair_status_score ON answers (pair_id, status, score);
CREATE INDEX answers_by_status ON answers (status);
CREATE INDEX web_assignments_by_status ON web_assignments (status, pair_id);
CREATE INDEX web_assignments_by_judge ON web_assignments (judge_id, status);
COMMIT;
PRAGMA user_version = 15;
