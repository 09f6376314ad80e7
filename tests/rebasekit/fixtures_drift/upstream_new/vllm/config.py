from dataclasses import dataclass, field


@dataclass
class CompilationConfig:
    level: int = 2
    workers: int = 1


@dataclass
class VllmConfig:
    compilation_config: CompilationConfig = field(default_factory=CompilationConfig)
