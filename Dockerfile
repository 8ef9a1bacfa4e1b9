# The judges' site of a crowdprefs campaign: `crowdprefs serve` with several workers on
# PostgreSQL. Build: docker build -t crowdprefs .   Run with compose.yaml beside this file.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY crowdprefs crowdprefs
COPY audio_prep audio_prep
COPY hit_templates hit_templates
COPY examples examples
RUN pip install . && useradd --create-home --uid 1000 crowdprefs && mkdir /campaigns \
    && chown crowdprefs /campaigns

USER crowdprefs
WORKDIR /campaigns
EXPOSE 8000
# /healthz answers 200 only while the database answers
HEALTHCHECK --interval=30s --timeout=5s --retries=3 CMD python -c \
    "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"
ENTRYPOINT ["crowdprefs"]
CMD ["serve", "/campaigns/study", "--host", "0.0.0.0", "--port", "8000", "--workers", "4"]
