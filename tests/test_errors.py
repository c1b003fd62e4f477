"""One exception base: every error a user can cause is an LlmbenchError and names what to fix."""

import pytest

from pytest_llmbench import ConfigError, LlmbenchError, ServerStartError
from pytest_llmbench.errors import RegistryError
from pytest_llmbench.gate.baselines import BaselineFileError
from pytest_llmbench.gate.merge import BaselineMergeError
from pytest_llmbench.gate.noise import NoiseModelError
from pytest_llmbench.launchers.docker import ContainerCleanupError
from pytest_llmbench.launchers.gpus import GPUAssignmentError
from pytest_llmbench.records.folder import ResultsFolderError
from pytest_llmbench.report.merge import MergeError


def test_config_error_names_file_config_and_key_in_one_line():
    e = ConfigError("benches/configs/x.yaml", "must be an integer, got str 'many'", "beta", "gpus")
    assert str(e) == "benches/configs/x.yaml: config 'beta', key 'gpus': must be an integer, got str 'many'"
    assert (e.file, e.config, e.key) == ("benches/configs/x.yaml", "beta", "gpus")
    assert str(ConfigError("x.yaml", "is empty")) == "x.yaml: is empty"


@pytest.mark.parametrize(
    "cls, also",
    [
        (ConfigError, Exception),
        (ServerStartError, RuntimeError),
        (GPUAssignmentError, RuntimeError),
        (ContainerCleanupError, RuntimeError),
        (NoiseModelError, ValueError),
        (RegistryError, ValueError),
        (BaselineFileError, Exception),
        (BaselineMergeError, Exception),
        (ResultsFolderError, Exception),
        (MergeError, Exception),
    ],
)
def test_every_plugin_error_shares_the_base_and_keeps_its_old_base(cls, also):
    assert issubclass(cls, LlmbenchError) and issubclass(cls, also)


def test_config_error_is_the_same_class_wherever_it_is_imported_from():
    from pytest_llmbench import config, models

    assert config.ConfigError is ConfigError and models.ConfigError is ConfigError
