from pathlib import Path

import pytest

from engine.core.config import SpecConfig
from engine.presets import (
    PresetError,
    list_presets,
    load_preset,
    load_preset_file,
    preset_paths,
    save_preset,
    user_preset_dir,
)

# The shipped presets, in the checkout's top-level presets/ (the wheel holds them inside the
# engine package: tests/test_wheel.py).
SHIPPED = Path(__file__).resolve().parents[2] / "presets"


def test_a_checkout_finds_the_shipped_presets_in_its_top_level_presets_dir():
    files = sorted(SHIPPED.glob("*.toml"))
    assert {"default", "seed-576", "tiny"} <= {path.stem for path in files}
    paths = preset_paths()
    for path in files:
        assert paths[path.stem] == path


def test_shipped_presets_load():
    for preset in list_presets():
        assert not isinstance(preset, PresetError), preset
        assert preset.description
    assert load_preset("default").config == SpecConfig()
    assert not load_preset("default").is_sweep
    assert load_preset("tiny").size() == 24


def write(tmp_path, text):
    path = tmp_path / "p.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('colour = "red"\n', "colour: unknown key"),
        ("[config]\nkk = 3\n", "config.kk: unknown key"),
        ('[config]\nk = "3"\n', "config.k: expected an integer"),
        ("[config]\nk = 3.0\n", "config.k: expected an integer"),
        ("[config]\nk = 0\n", "config.k: 0 is not allowed"),
        ('[config]\nacceptance_rate = "high"\n', "config.acceptance_rate: expected a number"),
        ("[config]\nacceptance_rate = 1.5\n", "config.acceptance_rate: 1.5 is not allowed"),
        ('[config]\ndraft_model = "big"\n', "config.draft_model: 'big' is not allowed"),
        ("[[grid]]\nk = 3\n", "grid[1].k: expected a non-empty list"),
        ("[[grid]]\nk = []\n", "grid[1].k: expected a non-empty list"),
        ("[[grid]]\nk = [1, -2]\n", "grid[1].k: -2 is not allowed"),
        ("[[grid]]\nwidth = [1]\n", "grid[1].width: unknown key"),
        ("grid = 3\n", "grid: expected an array of tables"),
        ("description = 3\n", "description: expected a string"),
        ("[config\n", "not valid TOML"),
    ],
)
def test_strict_errors_name_file_key_and_problem(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(PresetError) as info:
        load_preset_file(path)
    assert str(info.value).startswith(f"{path}: ")
    assert expected in str(info.value)


def test_missing_preset_names_the_known_ones(tmp_path):
    with pytest.raises(PresetError, match="not found; known presets: .*default"):
        load_preset("no-such-preset")
    with pytest.raises(PresetError, match="no such preset file"):
        load_preset(str(tmp_path / "absent.toml"))


def test_save_round_trips_never_overwrites_and_user_preset_is_found():
    config = SpecConfig(draft_model="entropy_aware", k=9, entropy_frac=0.25, tail="clamp")
    path = user_preset_dir() / "mine.toml"
    grids = ({"k": [1, 2], "draft_cost_us": [5.0, 10.0]},)
    save_preset(path, config, 'a "quoted" description', grids)
    loaded = load_preset("mine")
    assert loaded.config == config
    assert loaded.description == 'a "quoted" description'
    assert loaded.size() == 4
    with pytest.raises(FileExistsError):
        save_preset(path, SpecConfig())
    assert load_preset("mine").config == config
    save_preset(path, SpecConfig(), overwrite=True)
    assert load_preset("mine").config == SpecConfig()


SWEEP = "[[grid]]\nk = [1, 2]\n"


@pytest.mark.parametrize("scheduler", ["tcp://10.0.0.5:8786", "local:2", " local:1 "])
def test_a_sweep_preset_names_its_scheduler(tmp_path, scheduler):
    preset = load_preset_file(write(tmp_path, f'scheduler = "{scheduler}"\n' + SWEEP))
    assert preset.scheduler == scheduler.strip()
    assert load_preset_file(write(tmp_path, SWEEP)).scheduler is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('scheduler = "10.0.0.5:8786"\n' + SWEEP, "scheduler: '10.0.0.5:8786' is not a scheduler"),
        ('scheduler = "local:0"\n' + SWEEP, "scheduler: 'local:0': local:N needs a worker count"),
        ("scheduler = 2\n" + SWEEP, "scheduler: expected a string"),
        ('scheduler = "local:2"\n', "scheduler: only a sweep ([[grid]]) runs on a scheduler"),
    ],
)
def test_a_bad_scheduler_is_one_line_naming_the_file(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(PresetError) as info:
        load_preset_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and expected in message
    assert "\n" not in message


def test_a_grid_of_policy_limits_that_cannot_work_is_refused_on_loading(tmp_path):
    """Checked in combination (k against policy.k_max), like a part's ids: the preset's one
    line, not a crash when a view expands the grid."""
    path = tmp_path / "bad.toml"
    path.write_text(
        'description = "x"\n[config]\n"policy.name" = "goodput"\n"policy.k_max" = 8\n'
        '[[grid]]\nk = [3, 9]\n"cost.gpu" = ["h100"]\n'
    )
    with pytest.raises(PresetError) as info:
        load_preset_file(path)
    assert str(info.value).startswith(f"{path}: grid: k: 9 is above policy.k_max 8")


def test_a_preset_is_validated_again_when_its_text_or_the_users_hardware_changes(tmp_path):
    """Validation is kept per (path, text, known hardware and model ids) in a process (the
    app lists every preset each time its Sweep view or picker opens): an edited file, or a
    hardware id the user adds, is seen at the next load, and an error stays the file's."""
    path = tmp_path / "p.toml"
    path.write_text('description = "x"\n[config]\n"cost.model" = "roofline"\n"cost.gpu" = "mine"\n')
    for _ in range(2):  # the same error twice, from the kept result too
        with pytest.raises(PresetError) as info:
            load_preset_file(path)
        assert str(info.value).startswith(f"{path}: config.cost.gpu: unknown hardware 'mine'")
    spec_dir = tmp_path / "xdg-config" / "spectui"
    spec_dir.mkdir(parents=True)
    (spec_dir / "hardware.toml").write_text(
        '[mine]\nname = "mine"\nflops_bf16 = 1e15\nmem_bw_bytes_s = 3e12\n'
        'mem_bytes = 80e9\nsource = "test"\nnotes = "test"\n'
    )
    assert load_preset_file(path).config.gpu == "mine"
    path.write_text('description = "x"\n[config]\nk = 7\n')
    assert load_preset_file(path).config.k == 7
    assert load_preset_file(path) is load_preset_file(path)  # kept: one validation
