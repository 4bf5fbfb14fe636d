// ge::DataType: the element types of the vendor's APIs (LLM-DataDist's
// CacheDesc::data_type), with the vendor's names and values, and the byte
// size of each.
#ifndef GE_GRAPH_TYPES_H_
#define GE_GRAPH_TYPES_H_

#include <cstdint>

namespace ge {

// Values are the vendor's and never change (they travel in cache
// descriptions between processes).  5 is unused.
enum DataType {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT8 = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 6,
  DT_UINT16 = 7,
  DT_UINT32 = 8,
  DT_INT64 = 9,
  DT_UINT64 = 10,
  DT_DOUBLE = 11,
  DT_BOOL = 12,
  DT_STRING = 13,
  DT_DUAL_SUB_INT8 = 14,
  DT_DUAL_SUB_UINT8 = 15,
  DT_COMPLEX64 = 16,
  DT_COMPLEX128 = 17,
  DT_QINT8 = 18,
  DT_QINT16 = 19,
  DT_QINT32 = 20,
  DT_QUINT8 = 21,
  DT_QUINT16 = 22,
  DT_RESOURCE = 23,
  DT_STRING_REF = 24,
  DT_DUAL = 25,
  DT_VARIANT = 26,
  DT_BF16 = 27,
  DT_UNDEFINED = 28,
  DT_INT4 = 29,
  DT_UINT1 = 30,
  DT_INT2 = 31,
  DT_UINT2 = 32,
  DT_COMPLEX32 = 33,
  DT_HIFLOAT8 = 34,
  DT_FLOAT8_E5M2 = 35,
  DT_FLOAT8_E4M3FN = 36,
  DT_FLOAT8_E8M0 = 37,
  DT_FLOAT6_E3M2 = 38,
  DT_FLOAT6_E2M3 = 39,
  DT_FLOAT4_E2M1 = 40,
  DT_FLOAT4_E1M2 = 41,
  DT_HIFLOAT4 = 42,
  DT_MAX = 43,
};

// Bytes of one element; 0 for types that are not a whole number of bytes
// (DT_INT4, DT_UINT1, ...), have no fixed size (DT_STRING, DT_RESOURCE,
// DT_VARIANT, DT_STRING_REF) or are not types (DT_UNDEFINED, DT_MAX, 5).
constexpr uint32_t DataTypeSize(DataType type) {
  switch (type) {
    case DT_INT8: case DT_UINT8: case DT_BOOL: case DT_QINT8: case DT_QUINT8: case DT_DUAL_SUB_INT8:
    case DT_DUAL_SUB_UINT8: case DT_HIFLOAT8: case DT_FLOAT8_E5M2: case DT_FLOAT8_E4M3FN: case DT_FLOAT8_E8M0:
      return 1;
    case DT_FLOAT16: case DT_BF16: case DT_INT16: case DT_UINT16: case DT_QINT16: case DT_QUINT16:
      return 2;
    case DT_FLOAT: case DT_INT32: case DT_UINT32: case DT_QINT32: case DT_COMPLEX32:
      return 4;
    case DT_DOUBLE: case DT_INT64: case DT_UINT64: case DT_COMPLEX64: case DT_DUAL:
      return 8;
    case DT_COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

}  // namespace ge

#endif  // GE_GRAPH_TYPES_H_
