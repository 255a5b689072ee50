"""A served app opens files in its own folders only (issue 23, item 2): the working
directory, spectui's config and data folders, its shipped presets and each
``serve --files DIR``. Paths typed in it that lead elsewhere (a preset, a cost table in
the form or in a preset, a log) are refused in one line; an app in a terminal is free."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from spectui import confined
from spectui.app import create_app
from tests.app.helpers import notifications, settle
from tests.app.test_form_cost import choose

SECRET = "root:*:20228:0:99999:7:::"


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder the served app may not open, holding a 'secret' file and a preset."""
    folder = tmp_path_factory.mktemp("elsewhere")
    (folder / "shadow").write_text(SECRET + "\n")
    (folder / "p.toml").write_text('name = "p"\n[config]\nk = 3\n')
    return folder


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This process is a served app whose working directory (tmp_path) is its folder."""
    monkeypatch.setenv(confined.ENV, confined.environment())
    return tmp_path


def test_inside_is_allowed_outside_and_links_out_are_refused(served, outside):
    (served / "log.txt").write_text("x\n")
    assert confined.confine("log.txt") == Path("log.txt")
    assert confined.confine(served / "sub" / "new.csv")  # a file to write, not there yet
    for path in (outside / "shadow", "/etc/passwd", served / ".." / outside.name / "shadow"):
        with pytest.raises(confined.OutsideFiles, match="outside the folders"):
            confined.confine(path)
    (served / "link").symlink_to(outside / "shadow")
    with pytest.raises(confined.OutsideFiles, match="--files DIR"):
        confined.confine(served / "link")


def test_an_app_in_a_terminal_opens_any_path(monkeypatch, outside):
    monkeypatch.delenv(confined.ENV, raising=False)
    assert confined.confine(outside / "shadow") == outside / "shadow"


def test_serve_gives_its_apps_the_working_directory_and_each_files_folder(
    cli, monkeypatch, tmp_path, outside
):
    import shlex

    import spectui.served

    commands: list[str] = []
    monkeypatch.setattr(spectui.served, "serve", lambda command, **_: commands.append(command))
    monkeypatch.delenv(confined.ENV, raising=False)
    status, _, err = cli("serve", "--files", str(outside))
    assert status == 0, err
    # The app's shell command sets the folders; this process's environment is untouched.
    assignment, *app = shlex.split(commands[0])
    name, _, value = assignment.partition("=")
    assert name == confined.ENV and app[1:3] == ["-m", "spectui"]
    folders = value.split(os.pathsep)
    assert str(tmp_path.resolve()) in folders and str(outside.resolve()) in folders
    assert confined.ENV not in os.environ

    status, out, err = cli("serve", "--files", str(outside / "shadow"))
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "--files" in err and "is not a folder" in err


async def test_the_served_app_refuses_a_preset_and_a_cost_table_outside(served, outside):
    app = create_app("tiny")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert not app.apply_preset(str(outside / "p.toml"))
        await pilot.pause()
        shown = notifications(app)[-1]
        assert "p.toml: outside the folders this served app may open" in shown

        await choose(pilot, app, "cost.model", "table")
        app.form.set_field("cost.table", str(outside / "shadow"))
        await settle(pilot, app)
        assert app.config is None
        assert "outside the folders" in app.form.errors["cost.table"]
        assert SECRET not in app.form.errors["cost.table"]


async def test_the_served_app_refuses_a_log_outside(served, outside):
    from engine.presets import load_preset
    from tests.app.hosts_screens import CalibrateHost, shown_screen
    from tests.app.screen import screen_text

    app = CalibrateHost(load_preset("tiny").config)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await shown_screen(pilot, app)
        screen.load_file(str(outside / "shadow"))
        await settle(pilot, app)
        text = screen_text(app)
        assert "outside the folders" in text and SECRET not in text
