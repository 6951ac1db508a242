"""`notify:` in config.yaml: a bad target list or event name is one line, exit 2."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cli, one_line_error, ticket, write_config


def test_bad_notify_config_is_one_line(tmp_path: Path, repo: Path, home: Path) -> None:
    write_config(home, notify={"urls": [{"link": "x"}]})
    p = cli("status")
    assert p.returncode == 2 and "config.yaml" in p.stderr and "notify.urls" in p.stderr
    write_config(home, notify={"events": ["spiral", "exploded"]})
    p = cli("watch", "--once")
    assert p.returncode == 2 and "notify.events" in p.stderr


def test_notify_urls_must_be_a_list_of_known_tags(tmp_path: Path, home: Path) -> None:
    write_config(home, notify={"urls": "json://127.0.0.1:9/x"})
    p = cli("status")
    assert p.returncode == 2 and "notify.urls must be a list" in p.stderr
    write_config(home, notify={"urls": [{"url": "json://127.0.0.1:9/x", "tags": ["spirals"]}]})
    p = cli("status")
    assert p.returncode == 2 and "tags must name events" in p.stderr


def test_a_target_apprise_cannot_use_is_refused_by_launch_and_said_by_watch(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    write_config(home, notify={"urls": ["json://127.0.0.1:9/ok", "jsn://user:s3cretpw@127.0.0.1:9/hook"]})
    p = cli("launch", str(ticket(tmp_path, repo, "exit 0")))
    one_line_error(p, "config.yaml:", "apprise does not understand the notify URL jsn://...")
    assert "s3cretpw" not in p.stderr
    assert not (home / "runs").exists() or not list((home / "runs").iterdir())  # nothing was launched
    w = cli("watch", "--once")  # the watcher says so, and goes on watching (liveness, the other targets)
    assert w.returncode == 0 and "warning: " in w.stderr and "jsn://..." in w.stderr and "s3cretpw" not in w.stderr
    write_config(home, notify={"apprise_config": str(tmp_path / "missing.yml")})
    one_line_error(cli("launch", str(ticket(tmp_path, repo, "exit 0"))), "cannot read the apprise config")


def test_notify_on_is_the_top_level_name_of_the_events_that_notify(tmp_path: Path, home: Path) -> None:
    import json

    from orchestrator import config
    from orchestrator.notify.channels import from_config
    from orchestrator.runs.pipeline import NOTICES

    cfg_file = home / "config.yaml"
    base = json.loads(cfg_file.read_text())
    cfg_file.write_text(json.dumps({**base, "notify_on": ["succeeded", "gave_up"]}))
    assert from_config(config.load(cfg_file), NOTICES).events == ("succeeded", "gave_up")
    cfg_file.write_text(json.dumps({**base, "notify_on": ["won"]}))
    one_line_error(cli("status"), "notify_on must list events among provider, spiral,")
    cfg_file.write_text(json.dumps({**base, "notify_on": ["failed"], "notify": {"events": ["failed"]}}))
    one_line_error(cli("watch", "--once"), "notify_on and notify.events say the same thing")
