FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY memory ./memory
COPY config ./config
COPY migrations ./migrations
# editable: the migrations/ and config/ folders are read from /app at run time
RUN pip install --no-cache-dir -e .
# an editable install compiles none of the project's modules, and PYTHONDONTWRITEBYTECODE keeps
# the container from caching them: without this every start compiles them again (0.1-0.17 s)
RUN python -m compileall -q bot memory config
RUN useradd --create-home livememory && mkdir -p /data && chown livememory /data
USER livememory
CMD ["python", "-m", "bot", "run"]
