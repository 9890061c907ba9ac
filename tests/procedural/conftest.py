import pytest_asyncio

from .helpers import clear


@pytest_asyncio.fixture
async def pdb(engine_db):
    """``database`` then ``mariadb_database``, with the procedural tables emptied too."""
    await clear(engine_db)
    yield engine_db
    await clear(engine_db)
