"""Keeping /usr/local/cuda where it was: update-alternatives --query as Debian 12's dpkg 1.21 prints it, and the plan
for each way a host's link can have been made."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import link as cl

ROOT = "/usr/local"
CUDA, CUDA12, CUDA13 = "/usr/local/cuda", "/usr/local/cuda-12", "/usr/local/cuda-13"
TK128, TK130 = "/usr/local/cuda-12.8", "/usr/local/cuda-13.0"

# ct200 before: 12.8 from NVIDIA's apt repo, its config-common package registered the group, auto mode
QUERY_AUTO_12_8 = """Name: cuda
Link: /usr/local/cuda
Status: auto
Best: /usr/local/cuda-12.8
Value: /usr/local/cuda-12.8

Alternative: /usr/local/cuda-12.8
Priority: 128
"""
# after the role: 13.0 registered by its package, the group pinned on 12.8
QUERY_MANUAL_12_8 = """Name: cuda
Link: /usr/local/cuda
Status: manual
Best: /usr/local/cuda-13.0
Value: /usr/local/cuda-12.8

Alternative: /usr/local/cuda-12.8
Priority: 128

Alternative: /usr/local/cuda-13.0
Priority: 130
"""
QUERY_CUDA12_AUTO = QUERY_AUTO_12_8.replace("Name: cuda", "Name: cuda-12").replace("Link: /usr/local/cuda\n", "Link: /usr/local/cuda-12\n")
# a site toolkit registered above NVIDIA's
QUERY_SITE = """Name: cuda
Link: /usr/local/cuda
Status: auto
Best: /opt/site-cuda
Value: /opt/site-cuda

Alternative: /opt/site-cuda
Priority: 500

Alternative: /usr/local/cuda-12.8
Priority: 128
"""
NO_GROUP = ("", 2)  # "update-alternatives: error: no alternatives for cuda" on stderr


def via_alternatives(group, target):
    return {"kind": "link", "target": "/etc/alternatives/" + group, "via_alternatives": True, "alternatives_target": target}


def plain(target):
    return {"kind": "link", "target": target, "via_alternatives": False}


def run_plan(observed, groups, record=None, default="", wanted=("13.0",), exists=None, phase="before"):
    present = {TK128: True, TK130: phase != "before", "/opt/site-cuda": True}
    present.update(exists or {})
    parsed = {g: cl.parse_query(*q) if isinstance(q, tuple) else cl.parse_query(q, 0) for g, q in groups.items()}
    return cl.plan(ROOT, observed, parsed, record, default, list(wanted), present, phase)


def test_parse_query_reads_mode_value_and_priorities():
    q = cl.parse_query(QUERY_MANUAL_12_8, 0)
    assert q == {"link": CUDA, "status": "manual", "value": TK128, "alternatives": {TK128: 128, TK130: 130}}
    assert cl.parse_query("", 2) is None


@pytest.mark.parametrize("path,prio", [(TK128, 128), (TK130, 130), ("/usr/local/cuda-12.10", 130), ("/opt/site-cuda", 1)])
def test_priority_is_nvidias(path, prio):
    assert cl.priority(path) == prio


def test_apt_in_auto_mode_is_pinned_on_what_it_points_to():
    p = run_plan({CUDA: via_alternatives("cuda", TK128), CUDA12: via_alternatives("cuda-12", TK128)}, {"cuda": QUERY_AUTO_12_8, "cuda-12": QUERY_CUDA12_AUTO})
    assert p["refusals"] == [] and p["moved"] == []
    assert p["actions"] == [["update-alternatives", "--set", "cuda", TK128], ["update-alternatives", "--set", "cuda-12", TK128]]
    assert p["record"] == {CUDA: TK128, CUDA12: TK128}


def test_a_runfile_plain_link_is_registered_then_pinned():
    p = run_plan({CUDA: plain(TK128 + "/")}, {"cuda": NO_GROUP})
    assert p["actions"] == [["update-alternatives", "--install", CUDA, "cuda", TK128, "128"], ["update-alternatives", "--set", "cuda", TK128]]
    assert p["keep"] == {CUDA: TK128} and p["record"] == {CUDA: TK128}


def test_a_relative_link_to_a_toolkit_that_is_not_registered():
    p = run_plan(
        {CUDA: plain("cuda-12.8")},
        {
            "cuda": QUERY_MANUAL_12_8.replace("Value: /usr/local/cuda-12.8", "Value: /usr/local/cuda-13.0").replace(
                "Alternative: /usr/local/cuda-12.8\nPriority: 128\n\n", ""
            )
        },
    )
    assert p["actions"][0] == ["update-alternatives", "--install", CUDA, "cuda", TK128, "128"]
    assert p["actions"][1] == ["update-alternatives", "--set", "cuda", TK128]


def test_pinned_and_recorded_is_a_no_op():
    p = run_plan({CUDA: via_alternatives("cuda", TK128)}, {"cuda": QUERY_MANUAL_12_8}, record={"links": {CUDA: TK128}}, phase="after")
    assert p["actions"] == [] and p["record"] is None and p["moved"] == []


def test_a_competing_alternative_of_higher_priority_is_kept():
    p = run_plan({CUDA: via_alternatives("cuda", "/opt/site-cuda")}, {"cuda": QUERY_SITE})
    assert p["keep"] == {CUDA: "/opt/site-cuda"}
    assert p["actions"] == [["update-alternatives", "--set", "cuda", "/opt/site-cuda"]]  # never re-pointed to 12.8


@pytest.mark.parametrize(
    "seen,query",
    [
        (plain(TK130), QUERY_MANUAL_12_8),  # ln -sfn by hand
        (
            via_alternatives("cuda", TK130),
            QUERY_MANUAL_12_8.replace("Status: manual", "Status: auto").replace("Value: /usr/local/cuda-12.8", "Value: /usr/local/cuda-13.0"),
        ),
        ({"kind": "missing"}, QUERY_MANUAL_12_8),  # rm /usr/local/cuda
    ],
)
def test_a_link_moved_behind_the_roles_back_is_put_back_from_the_record(seen, query):
    p = run_plan({CUDA: seen}, {"cuda": query}, record={"links": {CUDA: TK128}}, phase="after")
    assert [m["link"] for m in p["moved"]] == [CUDA] and p["moved"][0]["recorded"] == TK128
    assert p["actions"] == [["update-alternatives", "--set", "cuda", TK128]]
    assert p["record"] is None  # the record is the truth, not the link
    assert "behind the role's back: put back" in cl.describe(p)[0]


def test_cuda_toolkit_default_moves_it_on_purpose_and_the_record_follows():
    p = run_plan({CUDA: via_alternatives("cuda", TK128)}, {"cuda": QUERY_MANUAL_12_8}, record={"links": {CUDA: TK128}}, default="13.0", phase="after")
    assert p["moved"] == [] and p["actions"] == [["update-alternatives", "--set", "cuda", TK130]]
    assert p["record"] == {CUDA: TK130} and p["notes"] == ["/usr/local/cuda moves from /usr/local/cuda-12.8 to /usr/local/cuda-13.0: cuda_toolkit_default=13.0"]


def test_a_default_not_installed_yet_is_pinned_after_the_install():
    p = run_plan({CUDA: via_alternatives("cuda", TK128)}, {"cuda": QUERY_AUTO_12_8}, default="13.0")
    assert p["pending"] == [CUDA] and p["actions"] == [] and p["record"] == {CUDA: TK130}


def test_a_missing_link_is_made_for_the_oldest_wanted_after_the_install():
    before = run_plan({CUDA: {"kind": "missing"}}, {"cuda": NO_GROUP}, wanted=["13.0", "12.9"], exists={"/usr/local/cuda-12.9": False})
    assert before["pending"] == [CUDA] and before["created"] == [CUDA] and before["record"] == {CUDA: "/usr/local/cuda-12.9"}
    after = run_plan(
        {CUDA: via_alternatives("cuda", TK130)},
        {"cuda": QUERY_MANUAL_12_8.replace("Status: manual", "Status: auto")},
        record={"links": {CUDA: TK130}},
        phase="after",
    )
    assert after["actions"] == [["update-alternatives", "--set", "cuda", TK130]] and after["moved"] == []


def test_a_real_directory_is_kept_and_cannot_be_pointed_elsewhere():
    p = run_plan({CUDA: {"kind": "directory"}}, {"cuda": NO_GROUP})
    assert p["kept_directories"] == [CUDA] and p["actions"] == [] and p["refusals"] == [] and p["record"] == {CUDA: None}
    assert cl.describe(p) == ["/usr/local/cuda: a directory, kept as it is (update-alternatives never replaces one)"]
    refused = run_plan({CUDA: {"kind": "directory"}}, {"cuda": NO_GROUP}, default="13.0", phase="after")
    assert refused["actions"] == [] and refused["record"] is None
    assert refused["refusals"][0].startswith("/usr/local/cuda is a directory, not a link to /usr/local/cuda-13.0 (cuda_toolkit_default)")


def test_a_recorded_directory_that_became_a_link_is_refused():
    p = run_plan({CUDA: plain(TK130)}, {"cuda": NO_GROUP}, record={"links": {CUDA: None}})
    assert p["actions"] == [] and "was a directory when first seen" in p["refusals"][0]


def test_a_recorded_toolkit_that_is_gone_is_refused_naming_the_variable():
    p = run_plan(
        {CUDA: plain("/usr/local/cuda-12.6")}, {"cuda": NO_GROUP}, record={"links": {CUDA: "/usr/local/cuda-12.6"}}, exists={"/usr/local/cuda-12.6": False}
    )
    assert p["actions"] == [] and p["record"] is None
    assert "should point to /usr/local/cuda-12.6 (recorded), which is not there" in p["refusals"][0]
    assert "set cuda_toolkit_default" in p["refusals"][0]


def test_a_major_link_appearing_with_the_install_is_pinned_where_the_package_made_it():
    p = run_plan(
        {CUDA: via_alternatives("cuda", TK128), CUDA13: via_alternatives("cuda-13", TK130)},
        {
            "cuda": QUERY_MANUAL_12_8,
            "cuda-13": QUERY_MANUAL_12_8.replace("cuda\n", "cuda-13\n")
            .replace("Status: manual", "Status: auto")
            .replace("Value: /usr/local/cuda-12.8", "Value: /usr/local/cuda-13.0"),
        },
        record={"links": {CUDA: TK128}},
        phase="after",
    )
    assert p["actions"] == [["update-alternatives", "--set", "cuda-13", TK130]] and p["record"] == {CUDA: TK128, CUDA13: TK130}


def test_phase_and_link_names_are_checked():
    with pytest.raises(cl.CudaLinkError):
        run_plan({}, {}, phase="later")
    with pytest.raises(cl.CudaLinkError):
        cl.group_of("/usr/local/cuda-toolkit")
