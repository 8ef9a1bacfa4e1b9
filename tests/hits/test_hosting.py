"""Clip hosting: content-addressed S3 uploads (moto) with presigned URLs, or a base URL."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import boto3
import numpy as np
import pandas as pd
import pytest
import scipy.io.wavfile
from botocore.config import Config
from moto import mock_aws

from crowdprefs.campaign.project import Settings, init_project
from crowdprefs.crowds.mturk.crowd import MTurkCrowd
from crowdprefs.errors import InputError
from crowdprefs.hits.hosting import (
    BaseUrlHost,
    FolderHost,
    S3Host,
    clip_paths,
    content_key,
    host_for_project,
)

WEEK = 7 * 24 * 3600


@pytest.fixture
def aws(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client(
            "s3", region_name="us-east-1", config=Config(signature_version="s3v4")
        )
        client.create_bucket(Bucket="clips")
        yield client


@pytest.fixture
def clips(tmp_path):
    folder = tmp_path / "audio dir"
    folder.mkdir()
    paths = []
    for i in range(4):
        path = folder / f"clip {i}.WAV"
        scipy.io.wavfile.write(path, 8000, np.full(100 + i, i, np.int16))  # init probes clips
        paths.append(str(path))
    return paths


def test_content_key_is_the_sha256_of_the_bytes(clips):
    data = Path(clips[1]).read_bytes()
    assert content_key(clips[1]) == hashlib.sha256(data).hexdigest() + ".wav"
    with pytest.raises(InputError, match="clip not readable"):
        content_key(clips[1] + ".missing")


def test_s3_uploads_are_incremental_and_content_addressed(aws, clips):
    host = S3Host("clips", "c/", expires=WEEK, client=aws)
    assert host.prepare(clips + ["https://example.org/x.mp3"]) == 4
    keys = {o["Key"] for o in aws.list_objects_v2(Bucket="clips")["Contents"]}
    assert keys == {"c/" + content_key(p) for p in clips}
    head = aws.head_object(Bucket="clips", Key="c/" + content_key(clips[0]))
    assert head["ContentType"] in ("audio/x-wav", "audio/wav")
    assert host.prepare(clips) == 0  # nothing new
    with open(clips[2], "ab") as handle:  # a changed clip gets a new key
        handle.write(b"more")
    assert host.prepare(clips) == 1
    body = aws.get_object(Bucket="clips", Key="c/" + content_key(clips[2]))["Body"].read()
    assert body == Path(clips[2]).read_bytes()


def test_presigned_urls_outlive_the_hit(aws, clips):
    host = S3Host("clips", "c/", expires=WEEK, client=aws)
    url = host.url(clips[0])
    parsed = urlparse(url)
    assert parsed.path.endswith("/c/" + content_key(clips[0]))
    assert parse_qs(parsed.query)["X-Amz-Expires"] == [str(WEEK)]
    assert host.url("https://cdn.example.org/a.mp3") == "https://cdn.example.org/a.mp3"
    with pytest.raises(InputError, match="7 days"):
        S3Host("clips", expires=WEEK + 1, client=aws)


def test_base_url_hosting(tmp_path, clips):
    host = BaseUrlHost("https://music.example.org/eval/", tmp_path)
    assert host.url(clips[0]) == "https://music.example.org/eval/audio%20dir/clip%200.WAV"
    assert host.prepare(clips) == 0
    with pytest.raises(InputError, match="outside the hosted folder"):
        BaseUrlHost("https://x.org", tmp_path / "elsewhere").url(clips[0])
    with pytest.raises(InputError, match="http"):
        BaseUrlHost("ftp://x.org", tmp_path)


def test_folder_host_copies_once(tmp_path, clips):
    host = FolderHost(tmp_path / "site")
    assert host.prepare(clips) == 4 and host.prepare(clips) == 0
    assert (tmp_path / "site" / host.url(clips[3])).read_bytes() == Path(clips[3]).read_bytes()


def _project(tmp_path, clips, hosting):
    frame = pd.DataFrame(
        {
            "query": ["Q"] * 3,
            "document": ["a", "b", "c"],
            "audio": clips[1:],
            "query_audio": [clips[0]] * 3,
        }
    )
    settings = Settings(answers_per_pair=2, sections={"hosting": hosting})
    return init_project(tmp_path / "p", frame, settings=settings)


def test_project_hosting_section(tmp_path, clips, aws):
    with _project(tmp_path, clips, {"base_url": "https://h.org/c"}) as project:
        host = host_for_project(project)
        assert sorted(clip_paths(project)) == sorted(clips)
        assert host.url(clips[0]) == "https://h.org/c/clip%200.WAV"
    with _project(tmp_path / "2", clips, {"s3_bucket": "clips", "url_expires_days": 2}) as project:
        host = host_for_project(project, s3_client=aws)
        assert host.expires == 2 * 86400
        # a HIT living 3 days would outlive its clip URLs: refused before anything is published
        crowd = MTurkCrowd(project, target="sandbox", client=object(), host=host)
        from crowdprefs.campaign import driver

        driver.next_batch(project)
        with pytest.raises(InputError, match="presigned clip URLs live 2.0 days"):
            crowd._clip_url(project, project.store.pairs(1))
    with (
        _project(tmp_path / "3", clips, {"s3_bucket": "b", "base_url": "https://x"}) as project,
        pytest.raises(InputError, match="choose one"),
    ):
        host_for_project(project)
