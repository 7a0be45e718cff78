"""Passwords never appear in the URLs our errors and repr show."""

from __future__ import annotations

import pytest

from agent_sessions._servers import mask_url


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://default:s3cret@host:6379/0", "redis://default:***@host:6379/0"),
        ("redis://:s3cret@host/0", "redis://:***@host/0"),
        ("postgresql://app:p%40ss@[::1]:5432/db", "postgresql://app:***@[::1]:5432/db"),
        (
            "postgresql://app@host/db?password=s3cret&sslmode=require",
            "postgresql://app@host/db?password=***&sslmode=require",
        ),
        ("host=db user=app password='se cret' dbname=x", "host=db user=app password=*** dbname=x"),
        ("host=db password=s3cret", "host=db password=***"),
        ("redis://host:6379/0", "redis://host:6379/0"),
        # Passwords the URL grammar would cut: all of it up to the last "@" is masked.
        ("postgresql://u:pa#s3cret@host/db", "postgresql://u:***@host/db"),
        ("redis://u:pa/ss3cret@host/0", "redis://u:***@host/0"),
        ("redis://u:pa?s3cret@host/0", "redis://u:***@host/0"),
        ("redis://u:pa@ss/w0rd@host/0", "redis://u:***@host/0"),
        ("postgresql://u:pa%s3cret@host/db", "postgresql://u:***@host/db"),
        # Digits then "/", "?" or "#" look like a port: the "@" after them says otherwise.
        ("postgresql://u:12/ab@host/db", "postgresql://u:***@host/db"),
        ("redis://u:12?ab@host/0", "redis://u:***@host/0"),
        ("redis://u:12#ab@host/0", "redis://u:***@host/0"),
        ("postgresql://u:5432/db?application_name=a@b", None),
        # An "@" after the authority is not the user info's.
        (
            "postgresql://u:pw@host:5432/db?application_name=a@b",
            "postgresql://u:***@host:5432/db?application_name=a@b",
        ),
        ("postgresql://host:5432/db?application_name=a@b", None),
        ("postgresql://[::1]:5432/db?application_name=a:b@c", None),
    ],
)
def test_mask_url_hides_the_password(url: str, masked: str | None) -> None:
    assert mask_url(url) == (url if masked is None else masked)
