/* Inputs for llm.c's train_gpt2_fp32 (scripts/llmc-peer): a GPT-2 124M checkpoint of random
 * weights and a token file of random tokens, in llm.c's file layouts (model: 256 int32 header,
 * magic 20240326 version 3, then the fp32 parameters; tokens: 256 int32 header, magic 20240520
 * version 1, count, then uint16 tokens). Only the shapes matter: the peer is timed, not compared.
 * Usage: llmc_inputs MODEL.bin TOKENS.bin MAX_T NTOKENS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
  state ^= state << 13, state ^= state >> 7, state ^= state << 17;
  return state;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: llmc_inputs MODEL.bin TOKENS.bin MAX_T NTOKENS\n");
    return 2;
  }
  const long maxT = atol(argv[3]), ntok = atol(argv[4]);
  const long V = 50257, Vp = 50304, L = 12, NH = 12, C = 768;
  const long params = Vp * C + maxT * C +
                      L * (C + C + 3 * C * C + 3 * C + C * C + C + C + C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C;
  int header[256] = {0};
  FILE* m = fopen(argv[1], "wb");
  if (m == NULL) {
    perror(argv[1]);
    return 1;
  }
  header[0] = 20240326, header[1] = 3, header[2] = (int)maxT, header[3] = (int)V;
  header[4] = (int)L, header[5] = (int)NH, header[6] = (int)C, header[7] = (int)Vp;
  fwrite(header, sizeof(int), 256, m);
  for (long i = 0; i < params; ++i) { /* uniform in ±0.02 */
    const float w = 0.04f * ((float)(next() >> 40) / 16777216.0f - 0.5f);
    fwrite(&w, sizeof w, 1, m);
  }
  fclose(m);
  FILE* t = fopen(argv[2], "wb");
  if (t == NULL) {
    perror(argv[2]);
    return 1;
  }
  int th[256] = {0};
  th[0] = 20240520, th[1] = 1, th[2] = (int)ntok;
  fwrite(th, sizeof(int), 256, t);
  for (long i = 0; i < ntok; ++i) {
    const uint16_t tok = (uint16_t)(next() % (uint64_t)V);
    fwrite(&tok, sizeof tok, 1, t);
  }
  fclose(t);
  printf("llmc_inputs: %ld parameters, %ld tokens\n", params, ntok);
  return 0;
}
