"""The README's tour, run as written against the shipped samples on a
cluster started as ``limelight up`` starts it (keys required): every line of
its first ``sh`` block must exit 0 and print what its ``# →`` comment says
(parts separated by ``; ``). Also: the multi-host recipe is the secured one,
and every link of the README leads to a file of the repository."""

import os
import re
import subprocess

import pytest

from harness import REPO, bin_dir, keyed_cluster

README = (REPO / "README.md").read_text(encoding="utf-8")


def section(title):
    """The text under the README's heading ``title``, up to the next heading of
    its level or above (lines in code blocks are never headings)."""
    lines, found, level, fenced = [], False, 0, False
    for line in README.splitlines(keepends=True):
        if line.startswith("```"):
            fenced = not fenced
        heading = None if fenced else re.match(r"(#+) (.*)", line)
        if found and heading and len(heading.group(1)) <= level:
            break
        if found:
            lines.append(line)
        elif heading and heading.group(2).strip() == title:
            found, level = True, len(heading.group(1))
    assert found, f"the README has no section '{title}'"
    return "".join(lines)


def tour_lines():
    block = re.search(r"```sh\n(.*?)```", section("A short tour"), re.S)
    assert block, "the tour has no sh block"
    lines = []
    for line in block.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        command, _, expected = line.partition("# →")
        lines.append((command.strip(), [e.strip() for e in expected.split("; ") if e.strip()]))
    return lines


def test_the_tour_has_commands_with_expectations():
    lines = tour_lines()
    assert len(lines) >= 8 and all(expected for _, expected in lines), lines


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from keyed_cluster(tmp_path_factory, "readme", shards=4)


def test_every_tour_line_runs_and_finds_what_it_says(cluster):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIMELIGHT_")}
    env.update(PATH=f"{bin_dir()}:{env.get('PATH', '')}", LIMELIGHT_ENDPOINT=cluster.endpoint, LIMELIGHT_DATA=str(cluster.data))
    for command, expected in tour_lines():
        done = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{command}\nexited {done.returncode}:\n{output}"
        for part in expected:
            assert part in output, f"{command}\nprinted no '{part}':\n{output}"


def test_the_multi_host_recipe_is_secured():
    recipe = section("Across hosts, secured")
    for flag in ("--require-keys", "--keys", "--cluster-secret-file", "--curve-secret-key", "--curve-server-key",
                 "--worker-keys", "--client-keys"):
        assert flag in recipe, f"the multi-host recipe lacks {flag}"
    assert "--no-require-keys" not in recipe and "0.0.0.0" not in recipe


def test_every_link_of_the_readme_leads_to_a_file():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" in target:
            continue
        assert (REPO / target).exists(), f"the README links to {target}, which does not exist"
