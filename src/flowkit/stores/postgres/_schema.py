"""The PostgreSQL schema, created and upgraded only by explicit, versioned migrations.

``flowkit store init URL`` (or ``migrate(url)``) applies every migration the database lacks,
each in its own transaction, and records the version reached in ``<schema>.meta``. Opening a
store never creates or changes a table: it checks the version and says what to run.

Tables (schema ``flowkit`` by default): ``threads`` (one row per thread: version, status,
next node, ``updated_at``, the last record's time, which listings page on, and ``due_at``,
when its timer is due: the timer index, set by the statement that appends the record),
``records`` (the journal: one row per record, the same O(Δ) JSON as a journal line),
``snapshots`` (the latest of each thread) and ``snapshot_trail`` (earlier ones, for pages of
history), ``attempts`` (attempt markers), ``leases`` (who runs a thread, until
when), ``work`` (queued inputs for workers) and ``events`` (what each commit announced,
ordered by a cursor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import StoreError
from ._driver import check_url, connect, pg_error, redact, valid_schema

if TYPE_CHECKING:
    import psycopg

__all__ = ["SCHEMA_VERSION", "migrate", "schema_version"]

#: Each migration as SQL, ``{s}`` standing for the schema; index + 1 is the version it makes.
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE SCHEMA IF NOT EXISTS {s};
    CREATE TABLE {s}.meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE SEQUENCE {s}.incarnations;
    -- fillfactor leaves room in each page, so a step's row update stays a HOT update.
    CREATE TABLE {s}.threads (
        thread_id text PRIMARY KEY,
        incarnation bigint NOT NULL DEFAULT nextval('{s}.incarnations'),
        flow text NOT NULL,
        version integer NOT NULL,
        status text NOT NULL,
        next text NOT NULL,
        retry_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
    ) WITH (fillfactor = 70);
    CREATE INDEX threads_pending ON {s}.threads (flow, updated_at) WHERE status = 'pending';
    CREATE TABLE {s}.records (
        thread_id text NOT NULL,
        version integer NOT NULL,
        kind text NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (thread_id, version)
    );
    CREATE TABLE {s}.snapshots (
        thread_id text PRIMARY KEY,
        version integer NOT NULL,
        body bytea NOT NULL
    );
    CREATE TABLE {s}.attempts (thread_id text PRIMARY KEY, body bytea NOT NULL);
    CREATE TABLE {s}.leases (
        thread_id text PRIMARY KEY,
        owner text NOT NULL,
        until timestamptz NOT NULL
    );
    CREATE TABLE {s}.work (
        id bigserial PRIMARY KEY,
        thread_id text NOT NULL,
        flow text NOT NULL,
        input bytea NOT NULL,
        gate text,
        expected_version integer,
        state text NOT NULL DEFAULT 'queued',
        error text,
        submitted_at timestamptz NOT NULL DEFAULT now(),
        available_at timestamptz NOT NULL DEFAULT now(),
        done_at timestamptz
    );
    CREATE INDEX work_queued ON {s}.work (flow, id) WHERE state = 'queued';
    CREATE INDEX work_thread ON {s}.work (thread_id, id) WHERE state = 'queued';
    -- The cursor is (xid, seq): a row is delivered only once every transaction that could
    -- still add a smaller cursor has ended (xid below the oldest running transaction).
    CREATE TABLE {s}.events (
        xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
        seq bigserial NOT NULL,
        thread_id text NOT NULL,
        version integer NOT NULL,
        body bytea NOT NULL,
        at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX events_cursor ON {s}.events (xid, seq);
    CREATE INDEX events_thread ON {s}.events (thread_id, version);
    """,
    # 2: timers (a gate's deadline, a node's wake-up). Only threads with one are indexed, and
    # a step that leaves `due_at` NULL changes no indexed column, so it stays a HOT update.
    """
    ALTER TABLE {s}.threads ADD COLUMN due_at timestamptz;
    CREATE INDEX threads_due ON {s}.threads (flow, due_at) WHERE due_at IS NOT NULL;
    """,
    # 3: thread listings, paged by keyset (most recently updated first, or by status). From
    # here `updated_at` is the last record's time and `created_at` the start record's (NULL
    # for a thread copied in from a compacted journal, whose start is gone).
    """
    ALTER TABLE {s}.threads ALTER COLUMN created_at DROP NOT NULL;
    CREATE INDEX threads_updated ON {s}.threads (updated_at DESC, thread_id);
    CREATE INDEX threads_status_updated ON {s}.threads (status, updated_at DESC, thread_id);
    """,
    # 4: earlier snapshots, which a page of history is replayed from (``_pages``).
    """
    CREATE TABLE {s}.snapshot_trail (
        thread_id text NOT NULL,
        version integer NOT NULL,
        body bytea NOT NULL,
        PRIMARY KEY (thread_id, version)
    );
    """,
)

#: The schema version this flowkit reads and writes.
SCHEMA_VERSION = len(_MIGRATIONS)


def _current(conn: psycopg.Connection[tuple[Any, ...]], schema: str) -> int:
    """The schema version recorded in the database (0: no flowkit schema there)."""
    found = conn.execute("SELECT to_regclass(%s)", (f"{schema}.meta",)).fetchone()
    if found is None or found[0] is None:
        return 0
    row = conn.execute(f"SELECT value FROM {schema}.meta WHERE key = 'schema_version'").fetchone()
    return int(str(row[0])) if row else 0


def schema_version(conn: psycopg.Connection[tuple[Any, ...]], url: str, schema: str) -> int:
    """Check that the database holds this flowkit's schema; ``StoreError`` saying what to run."""
    try:
        found = _current(conn, schema)
    except Exception as exc:
        raise pg_error(exc, url, "read the flowkit schema version") from exc
    if found == SCHEMA_VERSION:
        return found
    if found == 0:
        raise StoreError(
            f"The database at {redact(url)} has no flowkit schema `{schema}` yet; create it "
            f"once with `flowkit store init {redact(url)}"
            + ("" if schema == "flowkit" else f" --schema {schema}")
            + "` (or flowkit.stores.postgres.migrate)."
        )
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"The flowkit schema `{schema}` at {redact(url)} is version {found}, newer than this "
            f"flowkit knows ({SCHEMA_VERSION}); upgrade flowkit."
        )
    raise StoreError(
        f"The flowkit schema `{schema}` at {redact(url)} is version {found}; this flowkit needs "
        f"{SCHEMA_VERSION}. Run `flowkit store init {redact(url)}` to migrate it."
    )


def migrate(url: str, *, schema: str = "flowkit", timeout: float = 10.0) -> tuple[int, int]:
    """Bring the database at ``url`` to ``SCHEMA_VERSION``; returns (version before, after).

    Safe to run again (and from several processes at once: an advisory lock serialises them).
    """
    check_url(url)
    valid_schema(schema)
    with connect(url, timeout=timeout) as conn:
        try:
            with conn.transaction():
                # Two `init`s at once must not both create the tables.
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"flowkit:{schema}",))
                before = _current(conn, schema)
                if before > SCHEMA_VERSION:
                    schema_version(conn, url, schema)  # raises: newer than this flowkit
                for version in range(before + 1, SCHEMA_VERSION + 1):
                    conn.execute(_MIGRATIONS[version - 1].format(s=schema).encode())
                    conn.execute(
                        f"INSERT INTO {schema}.meta VALUES ('schema_version', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (str(version),),
                    )
        except StoreError:
            raise
        except Exception as exc:
            raise pg_error(exc, url, f"migrate the flowkit schema `{schema}`") from exc
    return before, SCHEMA_VERSION
