"""``zmtp.cli.common.number_option``: the argparse type every subcommand's numeric options use
(``zmtp cat``, ``zmtp interop``, and the QoS layer's ``worker`` and ``cat --qos``)."""

from __future__ import annotations

import argparse

import pytest

from zmtp.cli.common import number_option


def test_in_range_values_are_converted() -> None:
    assert number_option(float, "a number of seconds", minimum=0)("0") == 0.0
    assert number_option(float, "a number", minimum=0, exclusive=True)("0.25") == 0.25
    count = number_option(int, "an integer", minimum=1)("3")
    assert count == 3 and type(count) is int


@pytest.mark.parametrize(
    ("convert", "what", "minimum", "exclusive", "text", "message"),
    [
        (float, "a number of seconds", 0, False, "soon", "not a number of seconds: 'soon'"),
        (float, "a number of seconds", 0, False, "-1", "must be >= 0"),
        (float, "a number", 0, True, "0", "must be > 0"),
        (int, "an integer", 1, False, "0", "must be >= 1"),
        (int, "an integer", 0, False, "1.5", "not an integer: '1.5'"),
    ],
)
def test_out_of_range_or_unreadable_is_a_usage_error_that_says_why(
    convert: type, what: str, minimum: int, exclusive: bool, text: str, message: str
) -> None:
    parse = number_option(convert, what, minimum=minimum, exclusive=exclusive)
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{message}$"):
        parse(text)


@pytest.mark.parametrize("exclusive", [False, True])
def test_nan_is_never_in_range(exclusive: bool) -> None:
    """Regression: ``zmtp cat -i nan`` and ``zmtp interop --timeout nan`` were accepted (their
    checks were ``value < 0`` and ``value <= 0``, both false for NaN)."""
    parse = number_option(float, "a number of seconds", minimum=0, exclusive=exclusive)
    with pytest.raises(argparse.ArgumentTypeError, match="must be"):
        parse("nan")


def test_a_subcommand_reports_it_as_argparse_usage(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="demo")
    parser.add_argument("--interval", type=number_option(float, "a number of seconds", minimum=0))
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--interval", "-2"])
    assert exit_.value.code == 2
    assert "demo: error: argument --interval: must be >= 0" in capsys.readouterr().err
