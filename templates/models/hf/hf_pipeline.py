"""A HuggingFace model behind one call, `Pipeline.run(texts)`, used by model.py inside Triton
and by the verifier in-process, so that both compute the same thing. No Triton imports here."""

import inspect

import numpy as np
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

LOADERS = {
    "text-classification": AutoModelForSequenceClassification,
    "feature-extraction": AutoModel,
    "text-generation": AutoModelForCausalLM,
}


def resolve(source: str) -> str:
    """`path:/dir` as is; `hub:repo@revision` from HF_HOME's cache (never the network at load time)."""
    kind, _, ref = source.partition(":")
    if kind == "path":
        return ref
    from huggingface_hub import snapshot_download

    repo, _, revision = ref.partition("@")
    return snapshot_download(repo, revision=revision or None, local_files_only=True)


class Pipeline:
    def __init__(self, task, source, device="cpu", normalize=False, max_length=128, max_new_tokens=16):
        path = resolve(source)
        self.task, self.device = task, device
        self.normalize, self.max_length, self.max_new_tokens = normalize, max_length, max_new_tokens
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if task == "text-generation":
            self.tokenizer.padding_side = "left"
            if self.tokenizer.pad_token is None:
                self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        self.model = LOADERS[task].from_pretrained(path).to(device).eval()
        # only the inputs this model takes (a BERT tokenizer in front of DistilBERT adds token_type_ids)
        self.inputs = set(inspect.signature(self.model.forward).parameters)

    @torch.inference_mode()
    def run(self, texts):
        """texts -> {output name: array with one row per text}."""
        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
        ).to(self.device)
        enc = {k: v for k, v in enc.items() if k in self.inputs}
        if self.task == "text-classification":
            logits = self.model(**enc).logits.float()
            score, index = logits.softmax(-1).max(-1)
            labels = [str(self.model.config.id2label[int(i)]).encode("utf-8") for i in index]
            return {
                "LABEL": np.array(labels, dtype=np.object_).reshape(-1, 1),
                "SCORE": score.cpu().numpy().astype(np.float32).reshape(-1, 1),
                "LOGITS": logits.cpu().numpy().astype(np.float32),
            }
        if self.task == "feature-extraction":
            hidden = self.model(**enc).last_hidden_state.float()
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            emb = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # mean pooling over real tokens
            if self.normalize:
                emb = torch.nn.functional.normalize(emb, p=2, dim=1)
            return {"EMBEDDING": emb.cpu().numpy().astype(np.float32)}
        out = self.model.generate(
            **enc, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
        )
        new = out[:, enc["input_ids"].shape[1] :]
        texts_out = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        return {"GENERATED": np.array([t.encode("utf-8") for t in texts_out], dtype=np.object_).reshape(-1, 1)}

    def close(self):
        del self.model
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
