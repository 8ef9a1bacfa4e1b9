"""The store's bulk statements: many rows inserted at once, and temporary tables holding a long
list of values to join against (an ``IN (…)`` with one bound parameter per value passes
SQLite's limit, 32,766, and PostgreSQL's, 65,535, on a batch of 490,000 pairs) or many rows one
``UPDATE … FROM`` applies at once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Float,
    Integer,
    MetaData,
    Table,
    exc,
    select,
)
from sqlalchemy.types import TypeEngine

from crowdprefs.campaign.store.base import insert_ignore

if TYPE_CHECKING:
    import pandas as pd


def plain(column: pd.Series, *, integer: bool = False) -> list[Any]:
    """A column's values as plain Python objects, ``None`` where missing (what every driver
    takes); with ``integer``, whole numbers as ``int`` (e.g. a column of ints beside NaNs,
    which pandas holds as floats)."""
    values = column.astype("Int64") if integer else column
    return values.astype(object).where(column.notna(), None).tolist()


def insert_many(
    conn: Connection,
    table: Table,
    names: Sequence[str],
    rows: Iterable[tuple],
    *,
    ignore_conflicts: bool = False,
) -> None:
    """Insert ``rows`` (tuples of plain Python values of the columns ``names``) into ``table``;
    with ``ignore_conflicts``, rows whose key or unique columns are stored already are left out
    (:func:`.base.insert_ignore`).

    SQLite: the statement compiled once and run by the driver's own ``executemany``
    (SQLAlchemy's would build a parameter set per row: twice as slow on a batch of 490,000
    pairs). PostgreSQL: ``COPY`` (an ``executemany`` costs a round trip per row there: 25×
    slower), through a temporary table when conflicts are ignored."""
    if conn.dialect.name == "postgresql":
        if not ignore_conflicts:
            _copy(conn, table, names, rows)
            return
        columns = [Column(name, table.c[name].type) for name in names]
        with temporary_rows(conn, f"new_{table.name}", columns, rows) as new:
            conn.execute(insert_ignore(conn, table).from_select(list(names), select(new)))
        return
    statement = insert_ignore(conn, table) if ignore_conflicts else table.insert()
    compiled = statement.compile(dialect=conn.dialect, column_keys=list(names))
    order = [list(names).index(name) for name in compiled.positiontup]  # SQLite's ? parameters
    if order != list(range(len(names))):
        rows = (tuple(row[i] for i in order) for row in rows)
    params = list(rows)
    if params:
        conn.exec_driver_sql(compiled.string, params)


def _copy(conn: Connection, table: Table, names: Sequence[str], rows: Iterable[tuple]) -> None:
    """``COPY table (names) FROM STDIN`` of ``rows``, in the connection's transaction; a
    failure raised as SQLAlchemy's (so the store words it as any other). Rows of 64-bit integers
    and floats only go in PostgreSQL's binary format, each value encoded by psycopg as its
    column's type (the server's): 2–3× faster than text on the 490,000 verdicts of a large
    batch. Not for 32-bit integer columns: psycopg's binary ``int4`` wraps a value past 2³¹
    silently, where the text format refuses it."""
    quote = conn.dialect.identifier_preparer
    columns = ", ".join(quote.quote(name) for name in names)
    numbers = all(isinstance(table.c[name].type, BigInteger | Float) for name in names)
    sql = f"COPY {quote.format_table(table)} ({columns}) FROM STDIN"
    dbapi = conn.dialect.loaded_dbapi
    try:
        with conn.connection.driver_connection.cursor() as cursor:
            if numbers:
                cursor.execute(f"SELECT {columns} FROM {quote.format_table(table)} LIMIT 0")
                types = [column.type_code for column in cursor.description]
                sql += " (FORMAT BINARY)"
            with cursor.copy(sql) as copy:
                if numbers:
                    copy.set_types(types)
                for row in rows:
                    copy.write_row(row)
    except dbapi.Error as error:
        raise exc.DBAPIError.instance(sql, None, error, dbapi.Error) from None


@contextmanager
def temporary_rows(
    conn: Connection, name: str, columns: Sequence[Column], rows: Iterable[tuple]
) -> Iterator[Table]:
    """A temporary table ``name`` of ``columns`` holding ``rows`` (tuples in ``columns``
    order), seen only by ``conn`` and dropped at the end of the ``with`` block (on an error, the
    transaction's rollback drops it: both engines' DDL is transactional)."""
    table = Table(name, MetaData(), *columns, prefixes=["TEMPORARY"])
    table.create(conn)
    insert_many(conn, table, [column.name for column in columns], rows)
    if conn.dialect.name == "postgresql":
        # its size and values known; else the planner may scan it once per row joined to it
        conn.exec_driver_sql(f"ANALYZE {conn.dialect.identifier_preparer.quote(name)}")
    yield table
    table.drop(conn)


def temporary_table(
    conn: Connection, name: str, columns: Sequence[Column], rows: list[dict[str, Any]]
) -> AbstractContextManager[Table]:
    """:func:`temporary_rows` of ``rows`` given as dicts (a column missing from a row: NULL)."""
    names = [column.name for column in columns]
    return temporary_rows(conn, name, columns, (tuple(row.get(n) for n in names) for row in rows))


def listed(
    conn: Connection, values: Iterable[Any], type_: type[TypeEngine] = Integer
) -> AbstractContextManager[Table]:
    """``values`` as a temporary table ``position, value`` (``position`` counting from 0, in the
    order given; repeats kept) to join against, as :func:`temporary_rows`."""
    columns = [
        Column("position", Integer, primary_key=True, autoincrement=False),
        Column("value", type_),
    ]
    return temporary_rows(conn, "listed_values", columns, enumerate(values))
