"""Where workers' browsers fetch the clips from: S3 with presigned URLs, or the user's own server.

Configured by the project's ``[hosting]`` section, one of:

``s3_bucket`` (+ ``s3_prefix``, ``region``, ``url_expires_days``)
    Clips are uploaded under content-addressed keys ``<prefix><sha256>.<ext>`` (a changed clip
    gets a new key; an unchanged one is never uploaded twice) and served through presigned GET
    URLs. SigV4 presigned URLs live at most 7 days, so a HIT's lifetime plus its assignment
    duration must fit in ``url_expires_days`` (checked before publishing). Presigned URLs made
    with temporary (STS) credentials die with the credentials: publish with long-term keys.
``base_url`` (+ ``root``)
    Self-hosting: the clips' folder ``root`` (default: the folder holding all the clips) is
    mirrored by the user at ``base_url``; a clip's URL is ``base_url`` + its path under ``root``.

Clips already given as URLs in the candidates CSV are used as they are.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol
from urllib.parse import quote

from crowdprefs.errors import CrowdError, InputError, os_cause
from crowdprefs.progress import track

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

MAX_PRESIGN_SECONDS = 7 * 24 * 3600
"""The longest lifetime of a SigV4 presigned URL."""


def is_url(path: str) -> bool:
    return "://" in path


_DIGESTS: dict[tuple[str, int, int], str] = {}


def content_key(path: str | Path) -> str:
    """``<sha256 of the bytes>.<extension>``: the clip's name wherever it is hosted."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as error:
        raise InputError(f"clip not readable: {path}: {os_cause(error)}") from None
    cache_key = (str(path), stat.st_mtime_ns, stat.st_size)
    digest = _DIGESTS.get(cache_key)
    if digest is None:
        sha = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        digest = _DIGESTS[cache_key] = sha.hexdigest()
    return f"{digest}{path.suffix.lower()}"


def content_type(path: str | Path) -> str:
    guessed, _ = mimetypes.guess_type(str(path))
    return guessed or "application/octet-stream"


class ClipHost(Protocol):
    """Makes clips reachable by workers' browsers."""

    def prepare(self, paths: Iterable[str]) -> int:
        """Make every clip available (uploading what is missing); return how many were sent."""
        ...

    def url(self, path: str) -> str:
        """The URL a browser loads the clip from."""
        ...


class S3Host:
    """Content-addressed S3 objects served through presigned GET URLs."""

    def __init__(
        self, bucket: str, prefix: str = "crowdprefs/clips/", *, expires: int, client
    ) -> None:
        if not 1 <= expires <= MAX_PRESIGN_SECONDS:
            raise InputError(
                f"[hosting] presigned URLs live 1 s to 7 days; {expires} s was asked for"
            )
        self.bucket, self.prefix, self.expires, self.client = bucket, prefix, expires, client

    def key(self, path: str) -> str:
        return self.prefix + content_key(path)

    def _existing(self) -> set[str]:
        keys: set[str] = set()
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        )
        for page in pages:
            keys.update(item["Key"] for item in page.get("Contents", ()))
        return keys

    def prepare(self, paths: Iterable[str]) -> int:
        local = sorted({p for p in paths if not is_url(p)})
        keys = {p: self.key(p) for p in local}
        try:
            existing = self._existing()
            todo = [p for p in local if keys[p] not in existing]
            for path in track(todo, description="uploading clips"):
                with open(path, "rb") as body:
                    self.client.put_object(
                        Bucket=self.bucket,
                        Key=keys[path],
                        Body=body,
                        ContentType=content_type(path),
                    )
        except self._errors() as error:
            raise CrowdError(f"S3 bucket {self.bucket!r}: {error}") from None
        return len(todo)

    @staticmethod
    def _errors() -> tuple[type[Exception], ...]:
        from botocore.exceptions import BotoCoreError, ClientError

        return (BotoCoreError, ClientError)

    def url(self, path: str) -> str:
        if is_url(path):
            return path
        return self.client.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": self.key(path)},
            ExpiresIn=self.expires,
        )


class BaseUrlHost:
    """Self-hosting: ``root`` is mirrored at ``base_url``."""

    def __init__(self, base_url: str, root: Path) -> None:
        if not base_url.startswith(("https://", "http://")):
            raise InputError(f"[hosting] base_url must be an http(s) URL, got {base_url!r}")
        self.base_url = base_url.rstrip("/") + "/"
        self.root = Path(root).resolve()

    def prepare(self, paths: Iterable[str]) -> int:
        for path in paths:
            if not is_url(path) and not Path(path).is_file():
                raise InputError(f"clip not found: {path}")
        return 0

    def url(self, path: str) -> str:
        if is_url(path):
            return path
        try:
            relative = Path(path).resolve().relative_to(self.root)
        except ValueError:
            raise InputError(f"clip {path} is outside the hosted folder {self.root}") from None
        return self.base_url + quote(relative.as_posix())


class FolderHost:
    """Copies clips into ``folder/clips/`` under content-addressed names; relative URLs.

    For local previews: the page works from the disk and from a local web server alike.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def prepare(self, paths: Iterable[str]) -> int:
        target = self.folder / "clips"
        target.mkdir(parents=True, exist_ok=True)
        copied = 0
        for path in {p for p in paths if not is_url(p)}:
            destination = target / content_key(path)
            if not destination.exists():
                partial = destination.with_name(destination.name + ".part")
                shutil.copyfile(path, partial)
                os.replace(partial, destination)
                copied += 1
        return copied

    def url(self, path: str) -> str:
        return path if is_url(path) else f"clips/{content_key(path)}"


def clip_paths(project: Project) -> list[str]:
    """Every clip path (or URL) the project's HITs may show."""
    return project.store.clip_paths()


def host_for_project(project: Project, *, s3_client=None) -> ClipHost | None:
    """The host configured in ``[hosting]`` (``None`` when the section is absent)."""
    section = project.section("hosting")  # checked against the schema at open
    if "s3_bucket" in section and "base_url" in section:
        raise InputError("[hosting] sets both s3_bucket and base_url: choose one")
    if "base_url" in section:
        root = section.get("root")
        if root is None:
            local = [p for p in clip_paths(project) if not is_url(p)]
            root = os.path.commonpath([str(Path(p).parent) for p in local]) if local else "."
        return BaseUrlHost(str(section["base_url"]), project.root / root)
    if "s3_bucket" in section:
        if s3_client is None:
            import boto3
            from botocore.config import Config

            s3_client = boto3.session.Session().client(
                "s3",
                region_name=section.get("region", "us-east-1"),
                config=Config(signature_version="s3v4", retries={"mode": "adaptive"}),
            )
        days = float(section.get("url_expires_days", 7))
        return S3Host(
            str(section["s3_bucket"]),
            str(section.get("s3_prefix", "crowdprefs/clips/")),
            expires=int(days * 24 * 3600),
            client=s3_client,
        )
    return None
