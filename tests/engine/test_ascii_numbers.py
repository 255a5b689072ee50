"""The one parser of numbers (engine.core.fields.ascii_number): ASCII decimal digits only, in
flags, form fields and files (issue #41)."""

import math

import pytest

from engine.core.config import ConfigError, ascii_int, ascii_number, parse_value


@pytest.mark.parametrize(
    ("text", "value"),
    [("12", 12.0), (" -3 ", -3.0), ("+.5", 0.5), ("5.", 5.0), ("1.5e3", 1500.0), ("2E-2", 0.02)],
)
def test_ascii_decimal_numbers_are_read(text, value):
    assert ascii_number(text) == value


def test_the_words_for_infinity_and_nan_are_left_to_the_range_check():
    assert ascii_number("inf") == math.inf
    assert math.isnan(ascii_number("NaN"))


@pytest.mark.parametrize(
    "text",
    ["١٢", "５", "1_0", "٠", "0x10", "1e", "", " ", "1.2.3", "1,5", "--1", "12abc", "1" * 401],
)
def test_anything_else_is_not_a_number(text):
    with pytest.raises(ValueError):
        ascii_number(text)


@pytest.mark.parametrize("text", ["1.0", "1e3", "1_0", "١٢", "５", "inf", "+-1"])
def test_an_integer_is_digits_only(text):
    with pytest.raises(ValueError):
        ascii_int(text)


def test_an_integer_with_a_sign_and_spaces():
    assert ascii_int(" +12 ") == 12
    assert ascii_int("-7") == -7


@pytest.mark.parametrize("text", ["0.9,٠.٥", "0.9,1_0", "0.9 ５"])
def test_a_list_of_rates_is_ascii_numbers_too(text):
    with pytest.raises(ConfigError, match=r"^acceptance\.rates: .* is not allowed; expected 1 to"):
        parse_value("acceptance.rates", text)


def test_a_list_of_rates_in_ascii_is_read():
    assert parse_value("acceptance.rates", "0.9, .5 1") == "0.9,0.5,1"
