"""trainscope's Llama decoder in PyTorch, for the PyTorch reference and the suites' PyTorch peer.

The architecture of training/llama_model.h: RMSNorm, rotate-half RoPE (Hugging Face's
convention), causal attention with grouped-query heads, SwiGLU MLP, untied or tied head.
Modules carry Hugging Face Llama's names (model.layers.0.self_attn.q_proj.weight ...), so
trainscope's safetensors checkpoints load by name. The rotary tables are computed in double
and rounded to float, as kernels/rope.cpp does, so both engines start from the same numbers.
"""
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    """The fields of a Hugging Face config.json that the model needs."""

    def __init__(self, hf):
        self.dim = hf["hidden_size"]
        self.n_layers = hf["num_hidden_layers"]
        self.n_heads = hf["num_attention_heads"]
        self.n_kv_heads = hf.get("num_key_value_heads") or self.n_heads
        self.head_dim = hf.get("head_dim") or self.dim // self.n_heads
        self.mlp_dim = hf["intermediate_size"]
        self.vocab = hf["vocab_size"]
        self.max_seq = hf.get("max_position_embeddings", 2048)
        self.theta = float(hf.get("rope_theta", 10000.0))
        self.eps = float(hf.get("rms_norm_eps", 1e-5))
        self.tied = bool(hf.get("tie_word_embeddings", False))

    @staticmethod
    def preset_seed():
        """trainscope's `seed` preset (the MLX Llama example of the DP experiments)."""
        return Config({"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
                       "intermediate_size": 512, "vocab_size": 50257,
                       "max_position_embeddings": 512})


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope_tables(seq, head_dim, theta):
    """cos and sin [seq, head_dim] (each half repeated, for rotate-half)."""
    half = head_dim // 2
    inv = torch.tensor([1.0 / math.pow(theta, 2.0 * i / head_dim) for i in range(half)],
                       dtype=torch.float64)
    angles = torch.outer(torch.arange(seq, dtype=torch.float64), inv)
    cos, sin = angles.cos().float(), angles.sin().float()
    return torch.cat((cos, cos), -1), torch.cat((sin, sin), -1)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.dim, c.n_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.dim, c.n_kv_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.n_heads * c.head_dim, c.dim, bias=False)

    def forward(self, x, cos, sin, mask):
        c = self.c
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, c.n_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, c.n_kv_heads, c.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if c.n_kv_heads != c.n_heads:
            k = k.repeat_interleave(c.n_heads // c.n_kv_heads, dim=1)
            v = v.repeat_interleave(c.n_heads // c.n_kv_heads, dim=1)
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(c.head_dim))
        a = s.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.o_proj(a.transpose(1, 2).reshape(B, T, c.n_heads * c.head_dim))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.dim, c.mlp_dim, bias=False)
        self.up_proj = nn.Linear(c.dim, c.mlp_dim, bias=False)
        self.down_proj = nn.Linear(c.mlp_dim, c.dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c.dim, c.eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.dim, c.eps)
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab, c.dim)
        self.layers = nn.ModuleList([Block(c) for _ in range(c.n_layers)])
        self.norm = RMSNorm(c.dim, c.eps)


class LlamaForCausalLM(nn.Module):
    """Hugging Face's module tree: model.{embed_tokens,layers,norm}, lm_head."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.model = Decoder(c)
        self.lm_head = nn.Linear(c.dim, c.vocab, bias=False)
        if c.tied:
            self.lm_head.weight = self.model.embed_tokens.weight
        cos, sin = rope_tables(c.max_seq, c.head_dim, c.theta)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        cos, sin = self.cos[:T], self.sin[:T]
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        x = self.model.embed_tokens(tokens)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.model.norm(x))


def read_safetensors(path):
    """{name: float32 tensor} of a safetensors file (F32 only: what trainscope writes)."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {info['dtype']}; only F32 is read")
        begin, end = info["data_offsets"]
        raw = bytearray(data[base + begin:base + end])
        tensors[name] = torch.frombuffer(raw, dtype=torch.float32).reshape(info["shape"])
    return tensors


def load_checkpoint(model, path):
    """Every parameter of `model` from the file, by name; an error names what is missing."""
    tensors = read_safetensors(path)
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied head appears once, as the embedding
            if name not in tensors:
                raise ValueError(f"{path}: no tensor {name}")
            if tuple(tensors[name].shape) != tuple(p.shape):
                raise ValueError(f"{path}: {name} is {list(tensors[name].shape)}, "
                                 f"the model's is {list(p.shape)}")
            p.copy_(tensors[name])
