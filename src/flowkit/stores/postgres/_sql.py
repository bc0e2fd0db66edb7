"""Every SQL statement of the Postgres store, built once per schema name.

A step is one statement (so one round trip and one commit): the version compare-and-set on
the thread's row (its status, next node and ``updated_at``, the record's time: what listings
read), the journal record and its event rows, all or nothing. ``%b`` parameters
travel in binary (record bodies, never hex-escaped).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Statements"]

_CHANNEL = "flowkit_events"
#: A timer listing's page starts just after the timer the last page ended with (none: the
#: first page), compared as a row in the listing's order (due_at, thread_id).
_AFTER_TIMER = """(%(after_id)s::text IS NULL
    OR (due_at, thread_id) > (to_timestamp(%(after_due)s::double precision), %(after_id)s::text))"""


@dataclass(frozen=True, slots=True)
class Statements:
    """The statements of one schema; the ``*_notify`` variants also NOTIFY event readers."""

    create: bytes
    create_notify: bytes
    append: bytes
    append_notify: bytes
    append_one: bytes
    append_one_notify: bytes
    version: bytes
    extent: bytes
    journal: bytes
    load_after: bytes
    load_full: bytes
    load_full_verified: bytes
    records: bytes
    threads: bytes
    snapshot: bytes
    delete: tuple[bytes, ...]
    mark: bytes
    last_attempt: bytes
    exists: bytes
    compact: tuple[bytes, ...]
    due_timers: bytes
    due_timers_any: bytes
    drop_timer: bytes
    channel: str

    @classmethod
    def build(cls, s: str) -> Statements:
        wake = f", pg_notify('{_CHANNEL}_{s}', '')"
        # The version row and the records agree at the end (two index probes): a thread whose
        # last record row is gone, or whose version row was edited, takes no write.
        intact = f"""
                      AND EXISTS (SELECT 1 FROM {s}.records r
                                  WHERE r.thread_id = %(thread)s AND r.version = %(expected)s)
                      AND NOT EXISTS (SELECT 1 FROM {s}.records r
                                      WHERE r.thread_id = %(thread)s
                                        AND r.version > %(expected)s)"""
        # What `_continuity.Extent` reads: the version row, the records' run and the snapshot.
        extent = f"""
                CROSS JOIN LATERAL (
                    SELECT min(r.version) AS low, max(r.version) AS high, count(*) AS n,
                        count(*) FILTER (WHERE r.kind = 'start') AS starts,
                        min(r.version) FILTER (WHERE r.kind = 'start') AS start_at
                    FROM {s}.records r WHERE r.thread_id = t.thread_id) j"""
        # The same over the rows a load reads: from the snapshot's record on (every row
        # without a snapshot), so opening a thread never reads its whole history.
        window = extent.replace(
            "WHERE r.thread_id = t.thread_id)",
            "WHERE r.thread_id = t.thread_id AND r.version >= COALESCE(sn.version, -1))",
        )
        # One statement, so the snapshot and the records after it are read consistently.
        load = f"""
                SELECT 0 AS part, t.version, t.incarnation, sn.body,
                    j.low, j.high, j.n, j.starts, j.start_at, sn.version
                FROM {s}.threads t LEFT JOIN {s}.snapshots sn ON sn.thread_id = t.thread_id
                {{run}}
                WHERE t.thread_id = %(thread)s
                UNION ALL
                SELECT 1, r.version, NULL, r.body, NULL, NULL, NULL, NULL, NULL, NULL
                FROM {s}.records r
                WHERE r.thread_id = %(thread)s AND r.version > COALESCE(
                    (SELECT version FROM {s}.snapshots WHERE thread_id = %(thread)s), -1)
                ORDER BY 1, 2
            """
        create = f"""
                WITH made AS (
                    INSERT INTO {s}.threads (thread_id, flow, version, status, next, due_at,
                                             updated_at, created_at)
                    VALUES (%(thread)s, %(flow)s, %(version)s, %(status)s, %(next)s,
                            to_timestamp(%(due)s::double precision),
                            to_timestamp(%(ts)s::double precision),
                            to_timestamp(%(created)s::double precision))
                    ON CONFLICT (thread_id) DO NOTHING
                    RETURNING thread_id, incarnation
                ), rec AS (
                    INSERT INTO {s}.records (thread_id, version, kind, body)
                    SELECT thread_id, %(version)s, 'start', %(body)b FROM made
                ), ev AS (
                    INSERT INTO {s}.events (thread_id, version, body)
                    SELECT thread_id, %(version)s, %(event)b FROM made
                )
                SELECT incarnation{{wake}} FROM made
            """
        append = f"""
                WITH bump AS (
                    UPDATE {s}.threads
                    SET version = %(version)s, status = %(status)s, next = %(next)s,
                        updated_at = to_timestamp(%(ts)s::double precision), retry_at = NULL,
                        due_at = to_timestamp(%(due)s::double precision)
                    WHERE thread_id = %(thread)s AND version = %(expected)s{{intact}}
                    RETURNING thread_id, incarnation
                ), rec AS (
                    INSERT INTO {s}.records (thread_id, version, kind, body)
                    SELECT b.thread_id, u.v, u.k, u.b
                    FROM bump b,
                         unnest(%(versions)s::integer[], %(kinds)s::text[], %(bodies)b::bytea[])
                         AS u(v, k, b)
                ), ev AS (
                    INSERT INTO {s}.events (thread_id, version, body)
                    SELECT b.thread_id, u.v, u.e
                    FROM bump b, unnest(%(versions)s::integer[], %(events)b::bytea[]) AS u(v, e)
                )
                SELECT incarnation{{wake}} FROM bump
            """
        # The engine's step: one record, no arrays (a third cheaper for the server to plan).
        one = f"""
                WITH bump AS (
                    UPDATE {s}.threads
                    SET version = %(version)s, status = %(status)s, next = %(next)s,
                        updated_at = to_timestamp(%(ts)s::double precision), retry_at = NULL,
                        due_at = to_timestamp(%(due)s::double precision)
                    WHERE thread_id = %(thread)s AND version = %(expected)s{{intact}}
                    RETURNING thread_id, incarnation
                ), rec AS (
                    INSERT INTO {s}.records (thread_id, version, kind, body)
                    SELECT thread_id, %(version)s, %(kind)s, %(body)b FROM bump
                ), ev AS (
                    INSERT INTO {s}.events (thread_id, version, body)
                    SELECT thread_id, %(version)s, %(event)b FROM bump
                )
                SELECT incarnation{{wake}} FROM bump
            """
        return cls(
            append_one=one.format(wake="", intact=intact).encode(),
            append_one_notify=one.format(wake=wake, intact=intact).encode(),
            create=create.format(wake="").encode(),
            create_notify=create.format(wake=wake).encode(),
            append=append.format(wake="", intact=intact).encode(),
            append_notify=append.format(wake=wake, intact=intact).encode(),
            version=f"SELECT version FROM {s}.threads WHERE thread_id = %s".encode(),
            extent=f"""
                SELECT t.version, j.low, j.high, j.n, j.starts, j.start_at, sn.version
                FROM {s}.threads t LEFT JOIN {s}.snapshots sn ON sn.thread_id = t.thread_id
                {extent}
                WHERE t.thread_id = %(thread)s
            """.encode(),
            journal=f"""
                SELECT version, kind FROM {s}.records WHERE thread_id = %(thread)s
                ORDER BY version
            """.encode(),
            load_after=f"""
                SELECT t.version, t.incarnation, r.version,
                    CASE WHEN r.version > %(after)s THEN r.body END
                FROM {s}.threads t
                LEFT JOIN {s}.records r ON r.thread_id = t.thread_id AND r.version >= %(after)s
                WHERE t.thread_id = %(thread)s
                ORDER BY r.version
            """.encode(),
            # `load_full` checks the run of rows it reads, `load_full_verified` every row.
            load_full=load.format(run=window).encode(),
            load_full_verified=load.format(run=extent).encode(),
            records=f"""
                SELECT 0 AS part, t.version, NULL::bytea, NULL::text FROM {s}.threads t
                WHERE t.thread_id = %(thread)s
                UNION ALL
                SELECT 1, r.version, r.body, r.kind FROM {s}.records r
                WHERE r.thread_id = %(thread)s
                ORDER BY 1, 2
            """.encode(),
            threads=f"SELECT thread_id FROM {s}.threads".encode(),
            snapshot=f"""
                INSERT INTO {s}.snapshots (thread_id, version, body)
                SELECT thread_id, %(version)s, %(body)b FROM {s}.threads
                WHERE thread_id = %(thread)s AND version >= %(version)s AND %(version)s >= (
                    SELECT min(version) FROM {s}.records WHERE thread_id = %(thread)s)
                ON CONFLICT (thread_id) DO UPDATE
                SET version = excluded.version, body = excluded.body
                RETURNING version
            """.encode(),
            delete=tuple(
                f"DELETE FROM {s}.{table} WHERE thread_id = %s".encode()
                for table in (
                    "records",
                    "snapshots",
                    "snapshot_trail",
                    "attempts",
                    "events",
                    "work",
                    "threads",
                )
            ),
            mark=f"""
                INSERT INTO {s}.attempts (thread_id, body)
                SELECT thread_id, %(body)b FROM {s}.threads WHERE thread_id = %(thread)s
                ON CONFLICT (thread_id) DO UPDATE SET body = excluded.body
                RETURNING 1
            """.encode(),
            last_attempt=f"""
                SELECT a.body FROM {s}.threads t
                LEFT JOIN {s}.attempts a ON a.thread_id = t.thread_id
                WHERE t.thread_id = %s
            """.encode(),
            exists=f"SELECT 1 FROM {s}.threads WHERE thread_id = %s".encode(),
            compact=(
                # The thread's row, locked: appends wait until the compaction commits.
                f"""SELECT t.version, (SELECT min(version) FROM {s}.records r
                    WHERE r.thread_id = t.thread_id) FROM {s}.threads t
                    WHERE t.thread_id = %(thread)s FOR UPDATE""".encode(),
                f"""DELETE FROM {s}.records
                    WHERE thread_id = %(thread)s AND version <= %(version)s""".encode(),
                f"""INSERT INTO {s}.records (thread_id, version, kind, body)
                    VALUES (%(thread)s, %(version)s, 'start', %(body)b)""".encode(),
                f"""DELETE FROM {s}.snapshots
                    WHERE thread_id = %(thread)s AND version < %(version)s""".encode(),
            ),
            # The timer index: threads (of a flow, of any) whose timer is due by `until`,
            # earliest first, after the timer (`after_due`, `after_id`) a page ended with.
            due_timers=f"""
                SELECT thread_id, extract(epoch FROM due_at) FROM {s}.threads
                WHERE flow = %(flow)s AND due_at <= to_timestamp(%(until)s::double precision)
                  AND {_AFTER_TIMER}
                ORDER BY due_at, thread_id
                LIMIT %(limit)s::bigint
            """.encode(),
            due_timers_any=f"""
                SELECT thread_id, extract(epoch FROM due_at) FROM {s}.threads
                WHERE due_at <= to_timestamp(%(until)s::double precision)
                  AND {_AFTER_TIMER}
                ORDER BY due_at, thread_id
                LIMIT %(limit)s::bigint
            """.encode(),
            drop_timer=f"""
                UPDATE {s}.threads SET due_at = NULL
                WHERE thread_id = %(thread)s
                  AND due_at = to_timestamp(%(due)s::double precision)
            """.encode(),
            channel=f"{_CHANNEL}_{s}",
        )
