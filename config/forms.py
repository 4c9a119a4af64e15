"""Form fields shared by the dashboard's forms and the admin: JSON typed by a person, parsed safely."""

import json

from django import forms

from config.inputs import first_text_problem


def parse_json_text(raw: str):
    """What a person typed as JSON, parsed; a forms.ValidationError that says what is wrong otherwise,
    including for input nested too deep for Python's json (a RecursionError, which would be a 500) and for
    text PostgreSQL cannot store (`"\\u0000"`, a lone `"\\ud800"`: config.inputs)."""
    try:
        value = json.loads(raw)
        problem = first_text_problem(value)
    except json.JSONDecodeError as exc:
        raise forms.ValidationError(f"This is not valid JSON: {exc.msg} (line {exc.lineno}).") from None
    except RecursionError:
        raise forms.ValidationError("This JSON is nested too deeply.") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise forms.ValidationError(f"This is not valid JSON: {exc}.") from None
    if problem:
        where, _code, message = problem
        raise forms.ValidationError(f"{message} (at {where})" if where else message)
    return value


class SafeJSONField(forms.JSONField):
    """forms.JSONField whose input cannot raise past the form (the admin's JSON fields)."""

    def to_python(self, value):
        if self.disabled or value in self.empty_values or isinstance(value, list | dict | int | float):
            return super().to_python(value)
        return parse_json_text(value)

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, ensure_ascii=False, cls=self.encoder, indent=2)  # one key or item a line

    def bound_data(self, data, initial):
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return forms.fields.InvalidJSONInput(data)

    def has_changed(self, initial, data):
        try:
            return super().has_changed(initial, data)
        except RecursionError:
            return True
