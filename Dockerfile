# roofcheck for production: `docker compose up` (compose.yaml: the app and PostgreSQL), or alone
# with DATABASE_URL=postgresql://user:password@host:5432/db (default: SQLite in the /data volume).
# At start the migrations are applied once (python -m app.prestart), then uvicorn runs
# WEB_CONCURRENCY workers (default 2), which share nothing but the database.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/roofcheck
COPY pyproject.toml README.md alembic.ini chip_catalog.json ./
COPY app ./app
COPY templates ./templates
COPY migrations ./migrations
# Editable install: the app finds chip_catalog.json, templates/ and migrations/ beside app/.
RUN pip install -e . \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin roofcheck \
    && mkdir /data && chown roofcheck /data

ENV DATABASE_URL=sqlite:////data/roofcheck.db \
    WEB_CONCURRENCY=2
VOLUME /data
USER roofcheck
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]
# uvicorn reads its worker count from WEB_CONCURRENCY; idle keep-alive connections close after
# 5 s, and a stopping worker finishes its requests for up to 30 s (request bodies have
# ROOFCHECK_BODY_TIMEOUT_S, SECURITY.md)
CMD ["sh", "-c", "python -m app.prestart && exec uvicorn app.main:app --host 0.0.0.0 --port 8000 --proxy-headers --no-access-log --timeout-keep-alive 5 --timeout-graceful-shutdown 30"]
