"""The API's typed keyword options name exactly the fields of the configs each function accepts."""

import pytest

from ctx2static import api
from ctx2static.api_options import DistillOptions, ExportOptions, ExtractOptions, FitOptions, RetrofitOptions
from ctx2static.export import ExportConfig
from ctx2static.options import field_names
from ctx2static.retrofit.config import RetrofitConfig
from ctx2static.students.registry import STUDENTS, Source, load_student
from ctx2static.text.corpus import CorpusConfig
from ctx2static.text.vocab import VocabConfig


def _students(*sources):
    return [load_student(name).Config for name, s in STUDENTS.items() if s.source in sources]


@pytest.mark.parametrize(
    ("typed", "configs"),
    [
        (ExtractOptions, api._EXTRACT_CONFIGS),
        (FitOptions, (CorpusConfig, VocabConfig, *_students(Source.TEXT, Source.CACHE))),
        (DistillOptions, (*api._EXTRACT_CONFIGS, *_students(Source.CACHE))),
        (RetrofitOptions, (RetrofitConfig,)),
        (ExportOptions, (ExportConfig,)),
    ],
)
def test_typed_options_are_the_fields_of_the_configs(typed, configs):
    keys = typed.__required_keys__ | typed.__optional_keys__
    assert not typed.__required_keys__
    assert keys == {name for config in configs for name in field_names(config)}
