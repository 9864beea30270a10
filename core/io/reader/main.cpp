// samebits-reader: the reader process of isolated_read.hpp, started by samebits (and by the tests)
// for every untrusted file it parses; its kinds are samebits_reader_kinds().
#include "samebits/core/io/reader_process.hpp"

int main(int argc, char** argv) { return sb::io::reader_main(argc, argv, sb::io::samebits_reader_kinds()); }
