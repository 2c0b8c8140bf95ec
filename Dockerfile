# The service with its catalogs, templates and migrations; SQLite in the /data volume by default,
# or PostgreSQL with DATABASE_URL=postgresql://user:password@host:5432/db.
FROM python:3.11-slim
WORKDIR /srv/roofcheck
COPY pyproject.toml README.md alembic.ini chip_catalog.json ./
COPY app ./app
COPY templates ./templates
COPY migrations ./migrations
# Editable install: the app finds chip_catalog.json, templates/ and migrations/ beside app/.
RUN pip install --no-cache-dir -e . \
    && useradd --system --no-create-home roofcheck \
    && mkdir /data && chown roofcheck /data
ENV DATABASE_URL=sqlite:////data/roofcheck.db
VOLUME /data
USER roofcheck
EXPOSE 8000
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health')"
CMD ["uvicorn", "app.main:app", "--host", "0.0.0.0", "--port", "8000"]
