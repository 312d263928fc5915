"""What the test tiers share: fakes and builders (`fakes`), the shipped packs built once (`packs`), PostgreSQL
(`database`), clients for the served app (`ws_client`, `http_client`, `demo_page`) and an in-process app with the
real store (`store_app`)."""
