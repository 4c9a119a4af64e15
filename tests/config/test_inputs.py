"""What every face refuses before the database (config/inputs.py, config/converters.py)."""

import pytest
from django.urls import Resolver404, resolve

from config.converters import IdConverter
from config.inputs import ID_MAX, first_text_problem, text_problem


def test_text_the_database_cannot_store_is_named_with_drf_codes():
    assert text_problem("fine ünïcode ✓") is None
    assert text_problem("a\x00b") == ("null_characters_not_allowed", "Null characters are not allowed.")
    assert text_problem("x\ud800") == (
        "surrogate_characters_not_allowed",
        "Surrogate characters are not allowed: U+D800.",
    )


def test_the_first_problem_in_nested_data_names_its_dotted_path():
    data = {"name": "ok", "extractors": [{"name": "ok"}, {"rule_value": "\udfff"}]}
    assert first_text_problem(data)[:2] == ("extractors.1.rule_value", "surrogate_characters_not_allowed")
    assert first_text_problem({"thresholds": {"a\x00": 1}})[:2] == ("thresholds", "null_characters_not_allowed")
    assert first_text_problem({"a": [1, None, True, 2.5]}) is None


def test_the_id_converter_takes_bigint_ids_only():
    converter = IdConverter()
    assert converter.to_python(str(ID_MAX)) == ID_MAX
    for value in ("0", str(ID_MAX + 1)):
        with pytest.raises(ValueError):
            converter.to_python(value)


@pytest.mark.parametrize(
    "path", ["/projects/0/", f"/projects/{2**63}/", f"/projects/{10**20}/edit/", "/tokens/99999999999999999999/revoke/"]
)
def test_a_path_with_an_id_out_of_range_matches_no_route(path):
    with pytest.raises(Resolver404):
        resolve(path)
    assert resolve(f"/projects/{ID_MAX}/").kwargs == {"project_id": ID_MAX}
