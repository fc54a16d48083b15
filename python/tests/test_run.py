"""sluice.run, sluice.check and sluice.load against the command line."""

import sys
import warnings

import pandas as pd
import pytest

import sluice
from conftest import QUICKSTART

FILES = ["fct.csv", "summary.json", "queues.csv", "throughput.csv", "trace.csv", "scenario.resolved.toml"]


def assert_same_results(a, b, same_scenario_text=True):
    for name in ("fct", "queues", "throughput", "trace"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    assert a.summary == b.summary
    if same_scenario_text:
        assert a.scenario == b.scenario


def test_run_from_a_path():
    result = sluice.run(QUICKSTART)
    assert result.name == "quickstart"
    assert result.dir is None
    assert len(result.fct) == result.summary["overall"]["count"] > 0
    assert result.summary["run"]["seed"] == 1
    assert 'algorithm = "dcqcn"' in result.scenario
    assert set(result.throughput["label"]) >= {"flow 0"}
    assert (result.trace["flow"] == 0).all()
    assert result.wall_seconds > 0
    assert_same_results(result, sluice.run(str(QUICKSTART)))


def test_run_from_a_dict_matches_the_file():
    tomllib = pytest.importorskip("tomllib")
    table = tomllib.loads(QUICKSTART.read_text())
    from_dict = sluice.run(table)
    # The resolved text names where the scenario came from; the runs are the same.
    assert_same_results(from_dict, sluice.run(QUICKSTART), same_scenario_text=False)
    assert '(from <dict>)' in from_dict.scenario


def test_a_dict_resolves_file_names_against_base_dir(tmp_path):
    (tmp_path / "sizes.cdf").write_text("1000 0\n1000 50\n2000 100\n")
    scenario = {
        "base_dir": str(tmp_path),
        "topology": {"kind": "star", "hosts": 4, "rate": "100Gbps"},
        "workload": [{"kind": "poisson", "cdf": "sizes.cdf", "load": 0.2, "duration": "50us"}],
    }
    result = sluice.run(scenario)
    assert result.name == "scenario"
    assert result.fct["size_bytes"].between(1000, 2000).all()
    with pytest.raises(sluice.ScenarioError, match="sizes.cdf"):
        sluice.run({k: v for k, v in scenario.items() if k != "base_dir"})


def test_set_as_dict_or_list_and_seed():
    by_dict = sluice.run(QUICKSTART, set={"cc.algorithm": "dctcp", "workload.0.load": 0.5})
    by_list = sluice.run(QUICKSTART, set=["cc.algorithm=dctcp", "workload.0.load=0.5"])
    assert_same_results(by_dict, by_list)
    assert 'algorithm = "dctcp"' in by_dict.scenario
    assert "load = 0.5" in by_dict.scenario
    reseeded = sluice.run(QUICKSTART, seed=2)
    assert reseeded.summary["run"]["seed"] == 2
    assert not reseeded.fct.equals(sluice.run(QUICKSTART).fct)


def test_out_writes_the_files_of_the_command_line(tmp_path, cli):
    args = ["--set", "cc.algorithm=dctcp", "--set", "workload.0.load=0.4", "--seed", "3"]
    done = cli("run", QUICKSTART, *args, "--out", tmp_path / "cli", "--quiet")
    assert done.returncode == 0, done.stderr
    result = sluice.run(QUICKSTART, set={"cc.algorithm": "dctcp", "workload.0.load": 0.4}, seed=3, out=tmp_path / "py")
    assert result.dir == tmp_path / "py"
    assert sorted(p.name for p in (tmp_path / "py").iterdir()) == sorted(FILES)
    for name in FILES:
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_load_round_trip(tmp_path):
    ran = sluice.run(QUICKSTART, out=tmp_path / "run")
    loaded = sluice.load(tmp_path / "run")
    assert loaded.dir == tmp_path / "run"
    assert_same_results(ran, loaded)
    assert_same_results(ran, sluice.load(str(tmp_path / "run")))


def test_load_fills_missing_files_and_empty_fields(tmp_path):
    (tmp_path / "fct.csv").write_text(
        "id,src,dst,size_bytes,start_ns,finish_ns,fct_ns,ideal_fct_ns,slowdown,retransmitted_bytes,group\n"
        "0,1,2,1000,1.500,2.500,1.000,0.900,1.111111,0,0\n"
        "1,2,1,2000,3.000,,,1.800,,0,0\n"
    )
    (tmp_path / "trace.csv").write_text("time_ns,flow,variable,value\n1.000,0,cwnd,10\n1.000,0,ssthresh,\n")
    result = sluice.load(tmp_path)
    fct = result.fct
    assert fct["finish_ns"].dtype == "float64" and fct["slowdown"].dtype == "float64"
    assert fct["finish_ns"].isna().tolist() == [False, True]
    assert fct["size_bytes"].dtype == "int64"
    assert result.trace["value"].dtype == "float64"
    assert result.trace["value"].isna().tolist() == [False, True]
    for name in ("queues", "throughput"):
        frame = getattr(result, name)
        assert frame.empty and len(frame.columns) > 0, name
    assert "queue_bytes" not in result.throughput.columns
    assert result.summary == {} and result.scenario == ""
    with pytest.raises(FileNotFoundError):
        sluice.load(tmp_path / "missing")


def test_switch_rows_of_queues_have_missing_port_columns():
    queues = sluice.run(QUICKSTART).queues
    switches = queues[queues["kind"] == "switch"]
    assert len(switches) > 0
    assert switches["port"].isna().all() and switches["drops"].isna().all()
    assert str(queues["drops"].dtype) == "Int64"
    assert queues.loc[queues["kind"] == "port", "drops"].notna().all()


def test_unfinished_flows_have_no_finish():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = sluice.run(QUICKSTART, set={"simulation.duration": "0.2ms"})
    unfinished = result.fct[result.fct["finish_ns"].isna()]
    assert len(unfinished) == result.summary["overall"]["unfinished"] > 0
    assert unfinished["slowdown"].isna().all()


def test_check_matches_the_command_line(cli):
    text = sluice.check(QUICKSTART, set={"cc.algorithm": "hpcc"}, seed=4)
    assert "seed = 4" in text and 'algorithm = "hpcc"' in text
    done = cli("check", QUICKSTART, "--set", "cc.algorithm=hpcc", "--seed", "4")
    assert done.returncode == 0, done.stderr
    assert text == done.stdout


def test_algorithms_and_list():
    names = sluice.algorithms()
    assert {"dcqcn", "dctcp", "hpcc"} <= set(names)
    text = sluice.list_text()
    assert all(name in text for name in names)


def test_a_bad_key_raises_the_command_lines_error(cli):
    with pytest.raises(sluice.ScenarioError) as caught:
        sluice.run(QUICKSTART, set={"topology.kk": 4})
    error = caught.value
    assert isinstance(error, ValueError)
    assert str(error).startswith("--set topology.kk=4: topology.kk: unknown field `kk`, expected one of `k`")
    assert (error.location, error.key) == ("--set topology.kk=4", "topology.kk")
    assert str(error) == f"{error.location}: {error.key}: {error.message}"
    done = cli("run", QUICKSTART, "--set", "topology.kk=4", "--quiet")
    assert done.returncode == 2
    assert done.stderr == f"error: {error}\n"


def test_a_bad_file_raises_a_located_error(tmp_path, cli):
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\n[topology]\nkind = "star"\nhosts = 0\nrate = "100Gbps"\n'
                    '[[workload]]\nkind = "incast"\nreceiver = 0\nsize = "64KB"\n')
    with pytest.raises(sluice.ScenarioError) as caught:
        sluice.run(path)
    assert str(caught.value) == f"{path}:4: topology.hosts: must be at least 1 (got 0)"
    assert caught.value.location == f"{path}:4"
    done = cli("run", path, "--quiet")
    assert done.stderr == f"error: {caught.value}\n"
    with pytest.raises(sluice.ScenarioError, match=r"missing\.toml: cannot read the scenario file"):
        sluice.check(tmp_path / "missing.toml")


def test_other_bad_arguments():
    with pytest.raises(sluice.ScenarioError, match=r"^<dict>: topology\.k: None has no TOML form"):
        sluice.run({"topology": {"kind": "fat_tree", "k": None}})
    with pytest.raises(sluice.ScenarioError, match=r"^--seed 18446744073709551615: "):
        sluice.run(QUICKSTART, seed=2**64 - 1)
    with pytest.raises(sluice.ScenarioError, match=r"^--set x: expected KEY=VALUE"):
        sluice.run(QUICKSTART, set=["x"])
    with pytest.raises(TypeError):
        sluice.run(42)
    with pytest.raises(TypeError):
        sluice.run(QUICKSTART, set="cc.algorithm=dctcp")


def test_an_unwritable_out_raises_run_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(sluice.RunError, match="it exists and is not a directory"):
        sluice.run(QUICKSTART, out=blocker)
    assert blocker.read_text() == "not a directory"


def test_the_time_limit_warning():
    with pytest.warns(RuntimeWarning, match="hit its time limit"):
        result = sluice.run(QUICKSTART, set={"simulation.time_limit": "0.2ms"})
    assert result.summary["run"]["hit_time_limit"] is True


def test_set_dict_values_keep_their_python_types():
    result = sluice.run(QUICKSTART, set={"name": "4", "output.trace_flows": [0, 1], "switch.pfc.enabled": False})
    assert result.name == "4", "a string that reads as a number stays a string"
    assert sorted(result.trace["flow"].unique()) == [0, 1]
    if sys.version_info >= (3, 11):
        import tomllib

        assert tomllib.loads(result.scenario)["switch"]["pfc"]["enabled"] is False


def test_a_packet_trace_comes_back_as_a_frame_and_loads_from_its_directory(tmp_path):
    trace = {"output.packet_trace.flows": [0]}
    result = sluice.run(QUICKSTART, set=trace, out=tmp_path / "out")
    packets = result.packets
    assert list(packets.columns) == [
        "time_ns", "event", "port", "queue", "flow", "kind", "seq", "payload_bytes", "wire_bytes", "ecn",
        "queue_bytes",
    ]
    assert packets["port"].str.match(r"^(tor|agg|core)\d+:p\d+$").all()
    assert (packets["flow"] == 0).all()
    assert "send" in set(packets["event"]) and set(packets["kind"]) >= {"data", "ack"}
    assert packets["time_ns"].is_monotonic_increasing
    assert result.summary["extra"]["packet_trace"]["rows"] == len(packets)
    pd.testing.assert_frame_equal(sluice.load(tmp_path / "out").packets, packets)
    assert sluice.run(QUICKSTART).packets is None
    assert sluice.load(tmp_path / "out").fct.equals(result.fct)
