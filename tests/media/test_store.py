"""The object store contract, run against both backends: a local folder and S3 (moto in server mode on loopback)."""

from __future__ import annotations

import socket

import pytest

from config.settings import Settings
from engine.media_keys import key_from_source_url, new_key, source_url_for
from media.store import LocalStore, ObjectNotFound, S3Store, build_store


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def moto_endpoint():
    """A moto S3 server on a free loopback port, stopped by its handle; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    with pytest.MonkeyPatch.context() as env:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "baton-test",
            "AWS_SECRET_ACCESS_KEY": "baton-test",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            env.setenv(name, value)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.stop()


def _s3_settings(settings: Settings, endpoint: str, bucket: str, prefix: str = "") -> Settings:
    media = settings.media
    store = media.object_store.model_copy(
        update={
            "backend": "s3",
            "s3": media.object_store.s3.model_copy(
                update={"endpoint_url": endpoint, "bucket": bucket, "prefix": prefix}
            ),
        }
    )
    return settings.model_copy(update={"media": media.model_copy(update={"object_store": store})})


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path, cockpit):
    _, settings = cockpit
    if request.param == "local":
        local = settings.media.model_copy(
            update={"object_store": settings.media.object_store.model_copy(update={"local_dir": str(tmp_path)})}
        )
        return build_store(settings.model_copy(update={"media": local}))
    import boto3

    endpoint = request.getfixturevalue("moto_endpoint")
    bucket = f"baton-{tmp_path.name.lower().replace('_', '-')[-40:]}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
    return build_store(_s3_settings(settings, endpoint, bucket, prefix="media/"))


def test_round_trip_keeps_bytes_owner_and_type(store):
    key = new_key("image", "png")
    data = bytes(range(256)) * 10
    info = store.put(key, data, owner="用户-1", content_type="image/png")
    assert info.size == len(data)
    head = store.head(key)
    assert (head.key, head.owner, head.content_type, head.size) == (key, "用户-1", "image/png", len(data))
    got_info, got = store.get(key)
    assert got == data and got_info.owner == "用户-1"


def test_missing_and_malformed_keys_are_not_found(store):
    with pytest.raises(ObjectNotFound):
        store.head(new_key("audio", "wav"))
    with pytest.raises(ObjectNotFound):
        store.get(new_key("audio", "wav"))
    for bad in ("../../etc/passwd", "image/../../x.png", "image/abc.png", "video/" + "0" * 32 + ".mp4", ""):
        with pytest.raises(ObjectNotFound):
            store.get(bad)


def test_backend_is_chosen_by_config(cockpit, moto_endpoint, tmp_path):
    _, settings = cockpit
    assert isinstance(build_store(settings), LocalStore)
    assert build_store(settings).root == settings.state_dir / "media"
    assert isinstance(build_store(_s3_settings(settings, moto_endpoint, "any-bucket")), S3Store)


def test_s3_objects_live_under_the_prefix(cockpit, moto_endpoint):
    import boto3

    _, settings = cockpit
    client = boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="baton-prefix")
    store = build_store(_s3_settings(settings, moto_endpoint, "baton-prefix", prefix="tenant-a/"))
    key = new_key("audio", "wav")
    store.put(key, b"RIFF", owner="u", content_type="audio/wav")
    names = [o["Key"] for o in client.list_objects_v2(Bucket="baton-prefix")["Contents"]]
    assert names == [f"tenant-a/{key}"]


def test_source_urls_round_trip_and_foreign_urls_are_refused():
    key = new_key("image", "png")
    assert key_from_source_url(source_url_for(key), "") == key
    assert key_from_source_url(source_url_for(key, "https://baton.example/"), "https://baton.example") == key
    assert key_from_source_url(source_url_for(key), "https://baton.example") == key  # the path form stays valid
    for foreign in (
        f"https://evil.example/api/v1/media/{key}",
        f"file:///{key}",
        "/api/v1/media/../../etc/passwd",
        f"/api/v1/media/{key}?x=1",
        "/api/v1/media/image/nothex.png",
        "s3://bucket/" + key,
        "",
    ):
        assert key_from_source_url(foreign, "https://baton.example") is None, foreign
