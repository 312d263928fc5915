"""The routes' dependencies: the app state and what a route takes from it, each a one-line typed accessor.

They are `async def`: FastAPI runs a plain `def` dependency on a worker thread, a thread hop per request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from serve_app.apidocs.openapi import Authorization
from serve_app.state import AppState, Persistence, state_of
from store.errors import StoreUnavailable
from store.users import User


async def app_state(request: Request) -> AppState:
    return state_of(request.app)


StateDep = Annotated[AppState, Depends(app_state)]


async def persistence(state: StateDep) -> Persistence:
    if state.store is None:
        raise StoreUnavailable("This deployment runs without a database.")
    return state.store


StoreDep = Annotated[Persistence, Depends(persistence)]


async def current_user(store: StoreDep, authorization: Authorization) -> User:
    return await store.callers.signed_in(authorization)


CurrentUser = Annotated[User, Depends(current_user)]


async def arrived(request: Request) -> float:
    """When the request arrived (`ArrivalStamp`, the outermost middleware): where its deadline starts."""
    stamp: float = request.state.arrived
    return stamp


ArrivedDep = Annotated[float, Depends(arrived)]
