"""The example GitHub Actions workflow (.agent-loop.example/ci/github-workflow.yml) is valid YAML
that SchemaStore's GitHub workflow schema accepts (kept in tests/support/fixtures with its license,
from the check-jsonschema package, so no test reaches the network), and it runs agent-loop the way
docs/how-to/run-in-ci.md says: a matrix per stage from --dry-run --json, one job per group
with --group N --push origin on a full-history checkout, and an integration per stage. The docs
workflow (.agent-loop.example/ci/docs-workflow.yml) builds the site as a contributor does and
publishes it to GitHub Pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".agent-loop.example" / "ci" / "github-workflow.yml"
SCHEMA = REPO / "tests" / "support" / "fixtures" / "github-workflow.schema.json"


def load(text: str) -> dict[str, Any]:
    data = yaml.safe_load(text)
    # YAML 1.1 reads the key `on` as true; GitHub reads it as the key "on".
    if True in data:
        data["on"] = data.pop(True)
    return data


def problems(data: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]


def test_the_workflow_is_valid_for_the_github_workflow_schema() -> None:
    assert problems(load(WORKFLOW.read_text())) == []


def test_the_schema_check_can_fail() -> None:
    data = load(WORKFLOW.read_text())
    del data["jobs"]["plan"]["runs-on"]
    data["jobs"]["stage1"]["strategy"]["matrix"] = "not a matrix"
    assert len(problems(data)) >= 1


def steps(job: dict[str, Any]) -> str:
    return "\n".join(str(s.get("run", "")) for s in job["steps"])


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_each_stage_is_a_matrix_of_group_jobs_then_one_integration(stage: int) -> None:
    jobs = load(WORKFLOW.read_text())["jobs"]
    group = jobs[f"stage{stage}"]
    assert group["strategy"]["matrix"]["group"] == \
        f"${{{{ fromJSON(needs.plan.outputs.stage{stage}) }}}}"
    assert group["strategy"]["fail-fast"] is False
    assert '--group "${{ matrix.group }}" --push origin' in steps(group)
    assert "ANTHROPIC_API_KEY" in json.dumps(group)
    integrate = jobs[f"integrate{stage}"]
    assert f"stage{stage}" in integrate["needs"]
    assert "--integrate --from origin" in steps(integrate)
    if stage > 1:  # a later stage starts from the earlier stages' integration
        assert f"integrate{stage - 1}" in group["needs"]


def test_every_checkout_has_the_full_history_and_the_plan_job_reads_the_stages() -> None:
    jobs = load(WORKFLOW.read_text())["jobs"]
    checkouts = [s for job in jobs.values() for s in job["steps"]
                 if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert len(checkouts) == len(jobs)
    assert all(s["with"]["fetch-depth"] == 0 for s in checkouts)
    assert '--dry-run --json' in steps(jobs["plan"]) and ".stages" in steps(jobs["plan"])
    assert "gh pr create" in steps(jobs["pull-request"])


DOCS_WORKFLOW = REPO / ".agent-loop.example" / "ci" / "docs-workflow.yml"


def test_the_docs_workflow_is_valid_and_builds_as_a_contributor_does() -> None:
    data = load(DOCS_WORKFLOW.read_text())
    assert problems(data) == []
    build, publish = data["jobs"]["build"], data["jobs"]["publish"]
    assert "bash scripts/docs.sh" in steps(build)  # the one command, warnings as errors
    assert "-W" in (REPO / "scripts" / "docs.sh").read_text()
    uploads = [s for s in build["steps"] if "upload-pages-artifact" in str(s.get("uses", ""))]
    assert uploads and uploads[0]["with"]["path"] == "docs/_build/html"
    assert publish["needs"] == "build"
    assert any("deploy-pages" in str(s.get("uses", "")) for s in publish["steps"])
    assert publish["permissions"] == {"pages": "write", "id-token": "write"}
    assert "pull_request" in publish["if"]
