"""The start-time pool check's arithmetic: what the server leaves the Orchestrators' pools and where it refuses."""

from __future__ import annotations

import pytest

from store.capacity import PoolTooLarge, ServerCapacity, check_pool

STOCK = ServerCapacity(max_connections=100, reserved=3, margin=10)  # a stock PostgreSQL, baton.yaml's margin


def test_the_usable_connections_leave_out_the_reserved_ones_and_the_margin():
    assert STOCK.usable == 87
    assert ServerCapacity(max_connections=200, reserved=3 + 5, margin=0).usable == 192


def test_a_product_up_to_the_usable_connections_starts():
    check_pool(STOCK, pool_max=16, replicas=5)  # 80
    check_pool(STOCK, pool_max=29, replicas=3)  # 87, exactly


def test_the_issues_16_by_8_is_refused_with_both_figures_and_the_settings_to_change():
    with pytest.raises(PoolTooLarge) as refused:
        check_pool(STOCK, pool_max=16, replicas=8)
    message = str(refused.value)
    assert "database.pool_max 16 x 8 Orchestrator replicas" in message and "= 128 connections" in message
    assert "leaves them (max_connections 100 - 3 reserved" in message and "the 87 " in message
    assert "max_replicas" in message and "raise max_connections" in message
