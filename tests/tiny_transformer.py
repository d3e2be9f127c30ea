"""A tiny "local checkpoint" built on the spot, for the transformer tagger's
tests and benchmark: a WordPiece tokenizer trained on the given texts with
the ``tokenizers`` library and a 2-layer BERT of random weights, saved as a
Hugging Face folder (config.json, tokenizer files, model.safetensors).
Nothing is downloaded."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def tiny_checkpoint(folder: str | Path, texts: Iterable[str], vocab_size: int = 600, hidden: int = 32,
                    layers: int = 2, heads: int = 2, positions: int = 128, seed: int = 0) -> Path:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForTokenClassification, PreTrainedTokenizerFast

    folder = Path(folder)
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(list(texts), trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(folder)
    config = BertConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=2 * hidden, max_position_embeddings=positions)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        BertForTokenClassification(config).save_pretrained(folder)
    return folder
