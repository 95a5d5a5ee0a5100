/* tensorboard.h — TensorBoard event files, written by the project's own encoder (no TensorFlow,
 * no protobuf library): <dir>/events.out.tfevents.<unix seconds>.<host> (".<n>" appended when
 * that name exists), which TensorBoard reads as a run.
 *
 * File format: TFRecord framing per record —
 *   u64 length (little-endian) | u32 masked CRC-32C of those 8 bytes | data | u32 masked CRC-32C of data
 * with mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 — and each record's data a serialized
 * tensorflow.Event protobuf (tensorflow/core/util/event.proto, summary.proto):
 *   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
 *             SessionLog session_log = 7 }
 *   Summary { repeated Value value = 1 }
 *   Value   { string tag = 1; float simple_value = 2; Image image = 4; Audio audio = 6 }
 *   Image   { int32 height = 1; int32 width = 2; int32 colorspace = 3; bytes encoded_image_string = 4 }
 *   Audio   { float sample_rate = 1; int64 num_channels = 2; int64 length_frames = 3;
 *             bytes encoded_audio_string = 4; string content_type = 5 }
 *   SessionLog { SessionStatus status = 1 }   (START = 1)
 * The first record is Event{wall_time, file_version: "brain.Event:2"}. A run resumed after step S
 * writes Event{step: S + 1, session_log: START} next, so TensorBoard drops the earlier file's
 * points past S (the steps the resume trains again).
 *
 * Owns: the file descriptor and one blob buffer (images and audio are read into it), both made at
 * open; writing allocates nothing (records are built on the stack and written with write(2)), so
 * it runs after the pool commit. One thread: the trainer's. */
#ifndef TANDEM_RUNTIME_REPORT_TENSORBOARD_H
#define TANDEM_RUNTIME_REPORT_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

#define TANDEM_TB_PREFIX "events.out.tfevents."
#define TANDEM_TB_FILE_VERSION "brain.Event:2"
/* Longest tag, and most scalars in one event. */
#define TANDEM_TB_TAG_MAX 64
#define TANDEM_TB_MAX_SCALARS 32

typedef struct tandem_tb tandem_tb;

/* Create the event file in dir (which exists) and write its first record(s): the file version
 * and, when resumed_step > 0, the SessionLog START above. blob_max: the largest PNG or WAV file
 * tandem_tb_file will embed. On failure *out = NULL and no file is left. */
tandem_status tandem_tb_open(const char *dir, int64_t resumed_step, size_t blob_max, tandem_tb **out);
/* One event of n scalars (n <= TANDEM_TB_MAX_SCALARS): tags[i] = values[i] (stored as float). */
tandem_status tandem_tb_scalars(tandem_tb *tb, int64_t step, const char *const *tags, const double *values, int n);
/* One event with the PNG (kind 'i': Summary.Image, size and colour space from its IHDR) or WAV
 * (kind 'a': Summary.Audio, rate, channels and frames from its header, "audio/wav") file at path.
 * A file larger than blob_max or not of that format is TANDEM_E_INVALID (nothing written). */
tandem_status tandem_tb_file(tandem_tb *tb, int64_t step, const char *tag, const char *path, int kind);
/* The event file's path. */
const char *tandem_tb_path(const tandem_tb *tb);
/* Close; with discard the file is removed too (a run that did not start). NULL is ignored. */
void tandem_tb_close(tandem_tb *tb, int discard);

/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) of n bytes continuing crc (0 to start),
 * and TFRecord's mask of it. */
uint32_t tandem_crc32c(uint32_t crc, const void *data, size_t n);
uint32_t tandem_tb_mask_crc(uint32_t crc);

#endif
