"""What a page may show (orchestrator/notify/pages.py): secrets redacted, ordinary text untouched."""

from __future__ import annotations

import pytest

from orchestrator.notify.pages import redact
from tests.helpers import SECRET


@pytest.mark.parametrize(
    "text, secret",
    [
        (f"python x.py --token={SECRET}", SECRET),
        ("export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456", "abcdefghijklmnopqrstuvwxyz123456"),
        ("curl -H 'Authorization: Bearer abcdefghijklmnop1234567890'", "abcdefghijklmnop1234567890"),
        ("git clone https://bob:s3cretpassw0rd@example.com/r.git", "s3cretpassw0rd"),
        ("GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("aws AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
        ("password: hunter2hunter2", "hunter2hunter2"),
    ],
)
def test_redact(text: str, secret: str) -> None:
    assert secret not in redact(text)


def test_redact_keeps_ordinary_text() -> None:
    text = "12 of 20 tool calls ran tmp_debug_mc.py (made during the run)"
    assert redact(text) == text


@pytest.mark.parametrize(
    "text, secret",
    [
        ('{"password": "hunter2hunter2"}', "hunter2hunter2"),
        ('{"access_token":"abcd1234efgh5678"}', "abcd1234efgh5678"),
        ("redis://:SuperSecretPw123@cache:6379", "SuperSecretPw123"),
        ("postgres://bob:p@ssw0rd!@db/x", "ssw0rd"),
        ("curl -u admin:S3cretPass https://x.y", "S3cretPass"),
        ("mysql -pSecretPw1 -h db", "SecretPw1"),
        ('docker login -p "my pass word" registry', "my pass word"),
        ('password="correct horse battery staple"', "correct horse"),
        ("sk_live_abcdefghijklmnop1234", "abcdefghijklmnop1234"),
        ("glpat-abcdefghijklmnopqrst", "abcdefghijklmnopqrst"),
        ("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXX", "XXXXXXXXXXXX"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaA"),
        ("export KEY=Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc", "Zx8Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz0Xc"),
    ],
)
def test_redact_more_secret_shapes(text: str, secret: str) -> None:
    assert secret not in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        "pytest tests/test_a.py -k case -p no:cacheprovider",
        "git show 3f2a9c0e1b7d4e5f6a7b8c9d0e1f2a3b4c5d6e7f",
        "docker run -p 8080:80 image",
        "cd /home/dev/runs/demo-fixture-shim-20261129-194920/clone",
    ],
)
def test_redact_leaves_ordinary_commands(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    "text, secret",
    [  # the shapes of the "Hostile world" issue, item 3
        ("docker login -u me -p Tr0ub4dorAndThree", "Tr0ub4dorAndThree"),
        ("docker login -u me -p plainlowercase registry.x", "plainlowercase"),
        ("python tool.py --api-key plainapikeyvalue", "plainapikeyvalue"),
        ("aws configure set aws_secret_access_key q8Rz/Wv3Tn+Yb6Lc0Xd2Fh4Jk7Mp9Qs1Gu5Ae8Zc", "q8Rz/Wv3Tn"),
        ("echo '//registry.npmjs.org/:_authToken=Zk4Lm6Np8Qr0St2Uv4Wx6Yz8' >> .npmrc", "Zk4Lm6Np8Qr0"),
        ("npm config set //registry.npmjs.org/:_authToken Qw9Er7Ty5Ui3Op1As", "Qw9Er7Ty5Ui3Op1As"),
    ],
)
def test_redact_the_issue_shapes(text: str, secret: str) -> None:
    assert secret not in redact(text)


def test_every_notice_is_redacted_before_it_is_cut() -> None:
    from orchestrator.notify.pages import ending_notice, provider_notice, spiral_page
    from orchestrator.record.model import ProviderStatus, RunRecord, SpiralState

    url = "x" * 200 + " https://bob:s3cretpassw0rd@example.com/r.git"
    rec = RunRecord(
        run_id="r1",
        ticket_id="t",
        bucket="small",
        reason="agent exited 1: " + url,
        spiral=SpiralState(tripped_in_soft_band=True, page_signals=["polling"], page_evidence=[url], page_recent=[url]),
        provider=ProviderStatus(episode=1, text="retrying: " + url),
    )
    for title, body in (spiral_page(rec), provider_notice(rec), ending_notice(rec, "failed")):
        assert "s3cret" not in title + body and "r1" in title
        assert all(len(line) <= 220 for line in body.splitlines())
