//! The RDB codecs against what redis-server 7.0.15 writes: DUMP payloads of the packed forms it
//! produces and the snapshot files in Redis's `tests/assets` (RDB 3 to 10), read back; listpacks
//! written again byte for byte; LZF output compared; and every payload cut short and flipped at
//! random, to show that no input makes a reader panic.

use hopless_kv::rdb::decode::Decoder;
use hopless_kv::rdb::encode::Encoder;
use hopless_kv::rdb::listpack::{self, Elem, ListpackWriter};
use hopless_kv::rdb::{self, crc64::crc64, intset, ziplist, zipmap, Corrupt};

#[global_allocator]
static GLOBAL: hopless::Hopless = hopless::Hopless;

/// `DUMP lsmall` after `RPUSH lsmall a 1 -5 300` on redis-server 7.0.15.
const DUMP_LSMALL: &[u8] =
    b"\x12\x01\x02\x12\x12\x00\x00\x00\x04\x00\x81a\x02\x01\x01\xdf\xfb\x02\xc1,\x02\xff\x0a\x00\
    \xd8\xc6\x91\x84A\xc9@\x00";

/// `DUMP l` after `RPUSH l a 1 -5 300 70000 abc -4096 4095 -32768 8388607 -2147483648 9223372036854775807 <70 x's> <5000 y's>` on redis-server 7.0.15.
const DUMP_L: &[u8] =
    b"\x12\x01\x02\xc3@\x84T\x13\x1f\x13\x14\x00\x00\x0e\x00\x81a\x02\x01\x01\xdf\xfb\x02\xc1,\x02\
    \xf2p\x11\x01\x04\x83abc\x04\xd0\x00\x02\xcf\xff\x11\x02\xf1\x00\x80\x03\xf2\xff\xff\x7f\x04\
    \xf3\x00\x00\x00\x80\x05\xf4\xff\x80\x00\x04\x7f\x09\xe0Fx\xe0<\x00\x06H\xf0\x88\x13\x00\x00\
    y\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xee\x00\x02'\x8d\xff\x0a\x00\x84R\xaf\xda\xab\x17\
    \xb5l";

/// `DUMP h` after `HSET h f1 v1 f2 123 name redis` on redis-server 7.0.15.
const DUMP_H: &[u8] =
    b"\x10\x22\x22\x00\x00\x00\x06\x00\x82f1\x03\x82v1\x03\x82f2\x03{\x01\x84name\x05\x85redis\x06\
    \xff\x0a\x00\xaf\xe4yE\xcb\xddt\xdc";

/// `DUMP z` after `ZADD z 1 one 2.5 two -3 three 1e300 big` on redis-server 7.0.15.
const DUMP_Z: &[u8] =
    b"\x11\xc38@@\x1f@\x00\x00\x00\x08\x00\x85three\x06\xdf\xfd\x02\x83one\x04\x01\x01\x83two\x04\
    \x832.5\x09\x04\x83big\x04\x971.0\xe0\x05\x00\x071e+300\x18\xff\x0a\x00K\xd4\x08\x14?e\xa2m";

/// `DUMP q` after `RPUSH q <16378 q's>` on redis-server 7.0.15.
const DUMP_Q: &[u8] =
    b"\x12\x01\x02\xc3@\xcf\x80\x00\x00@\x09\x0b\x09@\x00\x00\x01\x00\xf0\xfa?\x00\x00q\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\x00\x00\x03\x00\xff\xff\xff\x0a\x00\xba[\xde\xeb\x9d\xcb\x9f\x03";

/// `DUMP q2` after `RPUSH q2 <16379 q's> <16377 w's>` on redis-server 7.0.15.
const DUMP_Q2: &[u8] =
    b"\x12\x02\x02\xc3@\xcf\x80\x00\x00@\x0a\x0b\x0a@\x00\x00\x01\x00\xf0\xfb?\x00\x00q\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\x01\x00\x03\x01\x80\x80\xff\x02\xc3@\xcd\x80\x00\x00@\x07\x0b\x07@\x00\x00\x01\x00\xf0\
    \xf9?\x00\x00w\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\
    \x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\
    \xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\xe0\xff\x00\
    \xe0\xff\x00\xe0\xff\x00\xc0\x00\x02\x7f\xfe\xff\x0a\x00\x9eV\xc5\xa3O\x82AG";

/// `DUMP ss` after `SADD ss x y` on redis-server 7.0.15.
const DUMP_SS: &[u8] = b"\x02\x02\x01y\x01x\x0a\x00\x0c\xdfk=\xb30\xbc\xf0";

/// `DUMP zbig` after `ZADD zbig -40.0 member:0 -38.75 member:1 -37.5 member:2 -36.25 member:3 -35.0 member:4 -33.75 member:5 -32.5 member:6 -31.25 member:7 -30.0 member:8 -28.75 member:9 -27.5 member:10 -26.25 member:11 -25.0 member:12 -23.75 member:13 -22.5 member:14 -21.25 member:15 -20.0 member:16 -18.75 member:17 -17.5 member:18 -16.25 member:19 -15.0 member:20 -13.75 member:21 -12.5 member:22 -11.25 member:23 -10.0 member:24 -8.75 member:25 -7.5 member:26 -6.25 member:27 -5.0 member:28 -3.75 member:29 -2.5 member:30 -1.25 member:31 0.0 member:32 1.25 member:33 2.5 member:34 3.75 member:35 5.0 member:36 6.25 member:37 7.5 member:38 8.75 member:39 10.0 member:40 11.25 member:41 12.5 member:42 13.75 member:43 15.0 member:44 16.25 member:45 17.5 member:46 18.75 member:47 20.0 member:48 21.25 member:49 22.5 member:50 23.75 member:51 25.0 member:52 26.25 member:53 27.5 member:54 28.75 member:55 30.0 member:56 31.25 member:57 32.5 member:58 33.75 member:59 35.0 member:60 36.25 member:61 37.5 member:62 38.75 member:63 40.0 member:64 41.25 member:65 42.5 member:66 43.75 member:67 45.0 member:68 46.25 member:69 47.5 member:70 48.75 member:71 50.0 member:72 51.25 member:73 52.5 member:74 53.75 member:75 55.0 member:76 56.25 member:77 57.5 member:78 58.75 member:79 60.0 member:80 61.25 member:81 62.5 member:82 63.75 member:83 65.0 member:84 66.25 member:85 67.5 member:86 68.75 member:87 70.0 member:88 71.25 member:89 72.5 member:90 73.75 member:91 75.0 member:92 76.25 member:93 77.5 member:94 78.75 member:95 80.0 member:96 81.25 member:97 82.5 member:98 83.75 member:99 85.0 member:100 86.25 member:101 87.5 member:102 88.75 member:103 90.0 member:104 91.25 member:105 92.5 member:106 93.75 member:107 95.0 member:108 96.25 member:109 97.5 member:110 98.75 member:111 100.0 member:112 101.25 member:113 102.5 member:114 103.75 member:115 105.0 member:116 106.25 member:117 107.5 member:118 108.75 member:119 110.0 member:120 111.25 member:121 112.5 member:122 113.75 member:123 115.0 member:124 116.25 member:125 117.5 member:126 118.75 member:127 120.0 member:128 121.25 member:129 122.5 member:130 123.75 member:131 125.0 member:132 126.25 member:133 127.5 member:134 128.75 member:135 130.0 member:136 131.25 member:137 132.5 member:138 133.75 member:139 135.0 member:140 136.25 member:141 137.5 member:142 138.75 member:143 140.0 member:144 141.25 member:145 142.5 member:146 143.75 member:147 145.0 member:148 146.25 member:149 147.5 member:150 148.75 member:151 150.0 member:152 151.25 member:153 152.5 member:154 153.75 member:155 155.0 member:156 156.25 member:157 157.5 member:158 158.75 member:159 160.0 member:160 161.25 member:161 162.5 member:162 163.75 member:163 165.0 member:164 166.25 member:165 167.5 member:166 168.75 member:167 170.0 member:168 171.25 member:169 172.5 member:170 173.75 member:171 175.0 member:172 176.25 member:173 177.5 member:174 178.75 member:175 180.0 member:176 181.25 member:177 182.5 member:178 183.75 member:179 185.0 member:180 186.25 member:181 187.5 member:182 188.75 member:183 190.0 member:184 191.25 member:185 192.5 member:186 193.75 member:187 195.0 member:188 196.25 member:189 197.5 member:190 198.75 member:191 200.0 member:192 201.25 member:193 202.5 member:194 203.75 member:195 205.0 member:196 206.25 member:197 207.5 member:198 208.75 member:199` on redis-server 7.0.15.
const DUMP_ZBIG: &[u8] =
    b"\x11\xc3F\x97M\xab\x12\xab\x0d\x00\x00\x90\x01\x88member:0\x09\xdf\xd8\x02\xc0\x0c\x091\x09\
    \x86-38.75\x07\xc0\x11\x082\x09\x85-37.5\x06\xc0\x10\x003@\x22\x026.2\xe0\x01\x22\x034\x09\
    \xdf\xdd\xe0\x00A\x005@\x1e\x003\xe0\x03A\x006@A\x002\xe0\x02A\x007@\x22\x001\xe0\x03A\x038\
    \x09\xdf\xe2\xe0\x00A\x009\x20\x1e\x002`\x83\x00\x89\xa0\xa2\x0510\x0a\x85-2@\x84\xe0\x00\
    \x11\x011\x0a\x20$`\x85\xe0\x00\x12\x042\x0a\xdf\xe7\x02\xe0\x00\x0d\x003@\x20`\x87\xe0\x00\
    \x12\x004@E@\x88\xe0\x00\x11\x005@$`\x89\xe0\x00\x12\x036\x0a\xdf\xec\xe0\x01E\x007\x20\x20\
    \x001\xe0\x05\x8b\x008\x20E\x001\xe0\x04\x8b\x009@$\xe0\x04\x8b\x0420\x0a\xdf\xf1\xe0\x00E\
    \x002@\xac\x001\xe0\x04\x8b\x0122@E\xe0\x03\x8b\x002@\xb0\x001\xe0\x04\x8b\x0424\x0a\xdf\xf6\
    \xe0\x01E\x005\x202@\x8a\xe0\x00\xbe\x0426\x0a\x84-\x20\x89\x00\x05\xc0\xbc\x0127\x20\x22@\
    \x88\xe0\x01\x22\x038\x0a\xdf\xfb\xe0\x01B\x009\x20\x1f@\x87\xe0\x00\x1f\x0130\x20B\x20\x86\
    \xe0\x00B\x0131\x20\x22@\x85\xe0\x01\x22\x032\x0a\x00\x01\xc0a\x0333\x0a\x84@\x1d\xe0\x01/\
    \x024\x0a\x83\x20?\x00\x04\xe0\x00\x20\x025\x0a\x84@a\xe0\x01\x20\x026\x0a\x05\xe0\x01>\x027\
    \x0a\x84@\x9f\xe0\x01\x1d\x028\x0a\x83\x20\xc1\xe0\x01>\x029\x0a\x84@\xe3\xe0\x00\x20\x0340\
    \x0a\x0a\xe0\x00>\x004\x20\x9ca\x22\xe0\x00\x9c\x0142\x20\x8f\x20\x7f\xe0\x01/\x003\x20\x22@\
    \x80\xe0\x01\x22\x024\x0a\x0f\xe0\x01A!Da\xaa\xe0\x01\x1e!DA\xce\xe0\x01A!Da\xf2\xe0\x01\x22\
    \x028\x0a\x14\xe0\x01A!Cb2\xe0\x00\x1e\x005!CBV\xe0\x00A\x005\x20\xa6bz\xe0\x01\x22\x022\x0a\
    \x19\xe0\x00A\x005\x20\xa2b\xba\xe0\x01\x1e\x004\x20A!\x06\xe0\x01A\x20\xa6c\x02\xe0\x01\x22\
    \x026\x0a\x1e\xe0\x01A\x20\xa2c@\xe0\x01\x1e\x008!v\xe1\x03\x07\x005\x20\xa6c\x86\xe0\x00\
    \x22\x0360\x0a#\xe0\x00A\x006\x20\xa2c\xc4\xe0\x01\x1e!IC\xe7\xe0\x00\x83\x006\x20\xa6d\x0a\
    \xe0\x01\x22\x024\x0a(\xe0\x01A\x20\xa2\x004B\x0a\xe0\x01\x1e!I\x004\xe0\x03\x83\x006\x20\
    \xa6\x004\xe1\x04\x8b\x0368\x0a-\xe0\x01A\x20\xa2\x004B\x0d\xe0\x00A\x007!I\x004\xe1\x03\x07\
    \x007\x20\xa6\x004B\x0f\xe0\x01\x22\x022\x0a2\xe0\x00A\x007\x20\xa2\x005\xe0\x04\x83\x007!I\
    \x005\xe0\x03\x83\x007\x20\xa6\x005\xe0\x04\x83\x0376\x0a7\xe0\x01A\x20\xa2\x005\xe0\x05\x83\
    !I\x005\xe0\x04\x83\x20\xa6\x005\xe0\x04\x83\x0380\x0a<\xe0\x00A\x008\x20\xa2\x006\xe0\x04\
    \x83\x008!I\x006\xe0\x03\x83\x008\x20\xa6\x006\xe0\x04\x83\x0384\x0aA\xe0\x01A\x20\xa2\x006\
    \xe0\x04\x83\x008!I\x006\xe0\x03\x83\x008\x20\xa6\x006\xe0\x05\x83\x028\x0aF\xe0\x01A\x20\
    \xa2\x007\xe0\x04\x83\x009!I\x007\xe0\x03\x83\x009\x20\xa6\x007\xe0\x04\x83\x0392\x0aK\xe0\
    \x00A\x009\x20\xa2\x007\xe0\x04\x83\x009!I\x007\xe0\x03\x83\x009\x20\xa6\x007\xe0\x04\x83\
    \x0396\x0aP\xe0\x01A\x20\xa2\x008\xe0\x05\x83!I\x008\xe0\x04\x83\x20\xa6\x008`\x83\x00\x8a\
    \xe5\x00\xd8\x030\x0bU\x01\xe0\x01\x0d\x031\x0b\x858`\x85\xe0\x01\x12\x032\x0b\x848@\x86\xe0\
    \x01\x11\x003\x20$`\x87\xe0\x01\x12\x024\x0bZ\xe0\x02E\x035\x0b\x859`\x89\xe0\x01\x20\x036\
    \x0b\x849@\x8a\xe0\x01\x11\x007\x20$\xe0\x06\x8b\x028\x0b_\xe0\x02E\x009\x20\x20\xe0\x05\x8b\
    \x0110\x20E\xe0\x04\x8b\x001\x20\xb0\x009\xe0\x05\x8b\x0312\x0bd\xe0\x01E\x0313\x0b\x86\x20\
    \xd6F\xeb\xe0\x00z\x0314\x0b\x85\x20\xd7'\x10\xe0\x01\x12\x005@&@\x8e\xe0\x02&\x026\x0bi\xe0\
    \x02H\x007@!@\x8f\xe0\x02!\x008@H\x20\x90\xe0\x02H\x009@&@\x91\xe0\x01&\x0320\x0bn\xe0\x01H\
    \x0121\x20!eD\xe0\x02!\x002\x20HEF\xe0\x01H\x002@\xb8eH\xe0\x02&\x024\x0bs\xe0\x02H@\xb3eK\
    \xe0\x02!\x006@H\xe0\x04\x91\x002@\xb8eO\xe0\x02&\x028\x0bx\xe0\x02H@\xb3eR\xe0\x01!\x0130\
    \x20HET\xe0\x01\x91\x003@\xb8eV\xe0\x02&\x022\x0b}\xe0\x01H\x003@\xb3eY\xe0\x02!AlE[\xe0\x02\
    H@\xb8e]\xe0\x02&\x046\x0b\xc0\x82\x02\xe1\x00\x8f\x003@\xb4ea\xe0\x02\x22AmEc\xe0\x02I@\xb9\
    ee\xe0\x01&\x0440\x0b\xc0\x87\xe0\x01I\x004@\xb5ei\xe0\x02\x22AnEk\xe0\x01I\x004@\xbaem\xe0\
    \x02&\x034\x0b\xc0\x8c\xe0\x02I@\xb6eq\xe0\x02\x22AoEs\xe0\x02I@\xbaeu\xe0\x02&\x038\x0b\xc0\
    \x91\xe0\x02I@\xb6ey\xe0\x01\x22\x005ApE{\xe0\x01I\x005@\xbae}\xe0\x02&\x032\x0b\xc0\x96\xe0\
    \x01I\x005@\xb6e\x81\xe0\x02\x22AqE\x83\xe0\x02I@\xbae\x85\xe0\x02&!q\x00\x9b\xe0\x02I@\xb6e\
    \x89\xe0\x02\x22AqE\x8b\xe0\x02I@\xbae\x8d\xe0\x01&\x006!q\x00\xa0\xe0\x01I\x006@\xb6e\x91\
    \xe0\x02\x22AqE\x93\xe0\x01I\x006@\xbae\x95\xe0\x02&!q\x00\xa5\xe0\x02I@\xb6e\x99\xe0\x02\
    \x22AqE\x9b\xe0\x02I@\xbae\x9d\xe0\x02&!q\x00\xaa\xe0\x02I@\xb6e\xa1\xe0\x01\x22\x007AqE\xa3\
    \xe0\x01I\x007@\xbae\xa5\xe0\x02&!q\x00\xaf\xe0\x01I\x007@\xb6e\xa9\xe0\x02\x22AqE\xab\xe0\
    \x02I@\xbae\xad\xe0\x02&!q\x00\xb4\xe0\x02I@\xb6e\xb1\xe0\x02\x22AqE\xb3\xe0\x02I@\xbae\xb5\
    \xe0\x01&\x008!q\x00\xb9\xe0\x01I\x008@\xb6e\xb7\xe0\x02\x22AqE\xb8\xe0\x01I\x008@\xbae\xb9\
    \xe0\x02&!q\x00\xbe\xe0\x02I@\xb6e\xbb\xe0\x02\x22AqE\xbc\xe0\x02I@\xbae\xbd\xe0\x02&!q\x00\
    \xc3\xe0\x02I@\xb6e\xbf\xe0\x01\x22\x009AqE\xc0\xe0\x01I\x009@\xbae\xc1\xe0\x02&!q\x00\xc8\
    \xe0\x01I\x009\x20\xb6\x002\xe5\x06\xc2\x009!q\x002\xe5\x05\xc2\x009\x20\xba\x002\xe5\x06\
    \xc2\x009!q\x00\xcd\xe0\x02I\x20\xb6\x002\xe5\x06\xc3\x009!q\x002\xe5\x05\xc3\x009\x20\xba\
    \x002e\xc3\x01\x07\xff\x0a\x00)g\x82\xa3\xc4\x80\x92\xe3";

/// Redis's `tests/assets/encodings.rdb`.
const FILE_ENCODINGS: &[u8] =
    b"REDIS0004\xfe\x00\x03\x04zset\x0c\x02bb\x0220\x02cc\x0230\x03bbb\x03200\x04bbbb\x0a500000000\
    0\x03ccc\x03300\x04cccc\x09123456789\x01a\x011\x02aa\x0210\x01b\x012\x03aaa\x03100\x01c\x013\
    \x04aaaa\x041000\x0b\x0cset_zipped_1\x10\x02\x00\x00\x00\x04\x00\x00\x00\x01\x00\x02\x00\x03\
    \x00\x04\x00\x0a\x0blist_zipped00\x00\x00\x00%\x00\x00\x00\x08\x00\x00\xc0\x01\x00\x04\xc0\
    \x02\x00\x04\xc0\x03\x00\x04\x01a\x03\x01b\x03\x01c\x03\xd0\xa0\x86\x01\x00\x06\xe0\x00\xbc\
    \xa0e\x01\x00\x00\x00\xff\x00\x06string\x0bHello\x20World\x00\x0ccompressible\xc3\x09@\x89\
    \x01aa\xe0|\x00\x01aa\x0b\x0cset_zipped_2\x18\x04\x00\x00\x00\x04\x00\x00\x00\xa0\x86\x01\
    \x00@\x0d\x03\x00\xe0\x93\x04\x00\x80\x1a\x06\x00\x00\x06number\xc0\x0a\x0b\x0cset_zipped_38\
    \x08\x00\x00\x00\x06\x00\x00\x00\x00\xca\x9a;\x00\x00\x00\x00\x00\x945w\x00\x00\x00\x00\x00^\
    \xd0\xb2\x00\x00\x00\x00\x00(k\xee\x00\x00\x00\x00\x00\xf2\x05*\x01\x00\x00\x00\x00\xbc\xa0e\
    \x01\x00\x00\x00\x02\x03set\x08\x0a6000000000\xc2\xa0\x86\x01\x00\x01a\xc0\x01\x01b\xc0\x02\
    \x01c\xc0\x03\x01\x04list\x18\xc0\x01\xc0\x02\xc0\x03\x01a\x01b\x01c\xc2\xa0\x86\x01\x00\x0a\
    6000000000\xc0\x01\xc0\x02\xc0\x03\x01a\x01b\x01c\xc2\xa0\x86\x01\x00\x0a6000000000\xc0\x01\
    \xc0\x02\xc0\x03\x01a\x01b\x01c\xc2\xa0\x86\x01\x00\x0a6000000000\x0d\x0bhash_zipped\x20\x20\
    \x00\x00\x00\x1b\x00\x00\x00\x06\x00\x00\x01a\x03\xc0\x01\x00\x04\x01b\x03\xc0\x02\x00\x04\
    \x01c\x03\xc0\x03\x00\xff\x0c\x0bzset_zipped\x20\x20\x00\x00\x00\x1b\x00\x00\x00\x06\x00\x00\
    \x01a\x03\xc0\x01\x00\x04\x01b\x03\xc0\x02\x00\x04\x01c\x03\xc0\x03\x00\xff\x04\x04hash\x0b\
    \x01b\xc0\x02\x02aa\xc0\x0a\x01c\xc0\x03\x03aaa\xc0d\x02bb\xc0\x14\x02cc\xc0\x1e\x03bbb\xc1\
    \xc8\x00\x03ccc\xc1,\x01\x03ddd\xc1\x90\x01\x03eee\x0a5000000000\x01a\xc0\x01\xff";

/// Redis's `tests/assets/hash-ziplist.rdb`.
const FILE_HASH_ZIPLIST: &[u8] =
    b"REDIS0009\xfa\x09redis-ver\x0b255.255.255\xfa\x0aredis-bits\xc0@\xfa\x05ctime\xc2\xc8\x5c\
    \x96`\xfa\x08used-mem\xc2\x90\xad\x0c\x00\xfa\x0caof-preamble\xc0\x00\xfe\x00\xfb\x01\x00\
    \x0d\x04hash\x1b\x1b\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02f1\x04\x02v1\x04\x02f2\x04\
    \x02v2\xff\xffO\x9c\xd1\xfd\x16i\x98\x83";

/// Redis's `tests/assets/zset-ziplist.rdb`.
const FILE_ZSET_ZIPLIST: &[u8] =
    b"REDIS0010\xfa\x09redis-ver\x0b255.255.255\xfa\x0aredis-bits\xc0@\xfa\x05ctime\xc2b\xb7\x13a\
    \xfa\x08used-mem\xc2P\xf4\x0c\x00\xfa\x0caof-preamble\xc0\x00\xfe\x00\xfb\x01\x00\x0c\x04zse\
    t\x19\x19\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x03one\x05\xf2\x02\x03two\x05\xf3\xff\xff\
    \x1f\xb2\xfd\xf0\x99\x7f\x9e\x19";

/// Redis's `tests/assets/list-quicklist.rdb`.
const FILE_LIST_QUICKLIST: &[u8] =
    b"REDIS0008\xfa\x09redis-ver\x054.0.9\xfa\x0aredis-bits\xc0@\xfa\x05ctime\xc2\x9f\x06&a\xfa\
    \x08used-mem\xc2\x80\x92\x07\x00\xfa\x0caof-preamble\xc0\x00\xfe\x00\xfb\x02\x00\x0e\x04list\
    \x01\x0d\x0d\x00\x00\x00\x0a\x00\x00\x00\x01\x00\x00\xf8\xff\x00\x01x\xc0\x07\xff5r\xf8T\x1a\
    \xc4\xd7@";

/// Redis's `tests/assets/hash-zipmap.rdb`.
const FILE_HASH_ZIPMAP: &[u8] =
    b"REDIS0003\xfe\x00\x09\x04hash\x10\x02\x02f1\x02\x00v1\x02f2\x02\x00v2\xff\xff";

/// A value as the tests compare it: elements as text (integers in decimal), scores as doubles.
#[derive(Debug, PartialEq)]
enum Value {
    Str(Vec<u8>),
    List(Vec<Vec<u8>>),
    /// Members sorted.
    Set(Vec<Vec<u8>>),
    Hash(Vec<Pair>),
    Zset(Vec<(Vec<u8>, f64)>),
}

fn text(e: Elem<'_>) -> Vec<u8> {
    match e {
        Elem::Int(v) => v.to_string().into_bytes(),
        Elem::Str(s) => s.to_vec(),
    }
}

fn texts(es: Vec<Elem<'_>>) -> Vec<Vec<u8>> {
    es.into_iter().map(text).collect()
}

/// A field and its value.
type Pair = (Vec<u8>, Vec<u8>);

/// A key, its value and its deadline.
type Key = (Vec<u8>, Value, Option<i64>);

fn pairs(es: Vec<Elem<'_>>) -> Result<Vec<Pair>, Corrupt> {
    if es.len() % 2 != 0 {
        return Err(Corrupt);
    }
    Ok(es.chunks(2).map(|p| (text(p[0]), text(p[1]))).collect())
}

fn scored(es: Vec<Elem<'_>>) -> Result<Vec<(Vec<u8>, f64)>, Corrupt> {
    let score = |e: Elem<'_>| match e {
        Elem::Int(v) => Ok(v as f64),
        Elem::Str(s) => std::str::from_utf8(s)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or(Corrupt),
    };
    pairs(es.clone())?;
    es.chunks(2).map(|p| Ok((text(p[0]), score(p[1])?))).collect()
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

/// A value's body after its type byte, as `rdbLoadObject` reads each type.
fn read_value(t: u8, d: &mut Decoder<'_>) -> Result<Value, Corrupt> {
    Ok(match t {
        rdb::RDB_TYPE_STRING => Value::Str(d.string()?.into_owned()),
        rdb::RDB_TYPE_LIST | rdb::RDB_TYPE_SET => {
            let n = d.count(1)?;
            let v = (0..n)
                .map(|_| Ok(d.string()?.into_owned()))
                .collect::<Result<_, Corrupt>>()?;
            if t == rdb::RDB_TYPE_SET {
                Value::Set(sorted(v))
            } else {
                Value::List(v)
            }
        }
        rdb::RDB_TYPE_ZSET | rdb::RDB_TYPE_ZSET_2 => {
            let n = d.count(2)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let m = d.string()?.into_owned();
                let s = if t == rdb::RDB_TYPE_ZSET {
                    d.old_double()?
                } else {
                    d.binary_double()?
                };
                v.push((m, s));
            }
            // Files list a skiplist's members from the highest score down.
            v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            Value::Zset(v)
        }
        rdb::RDB_TYPE_HASH => {
            let n = d.count(2)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push((d.string()?.into_owned(), d.string()?.into_owned()));
            }
            Value::Hash(v)
        }
        rdb::RDB_TYPE_HASH_ZIPMAP => {
            let s = d.string()?;
            Value::Hash(
                zipmap::pairs(&s)?
                    .into_iter()
                    .map(|(f, v)| (f.to_vec(), v.to_vec()))
                    .collect(),
            )
        }
        rdb::RDB_TYPE_LIST_ZIPLIST => Value::List(texts(ziplist::entries(&d.string()?)?)),
        rdb::RDB_TYPE_SET_INTSET => {
            let m = intset::members(&d.string()?)?;
            Value::Set(sorted(m.iter().map(|v| v.to_string().into_bytes()).collect()))
        }
        rdb::RDB_TYPE_ZSET_ZIPLIST => Value::Zset(scored(ziplist::entries(&d.string()?)?)?),
        rdb::RDB_TYPE_HASH_ZIPLIST => Value::Hash(pairs(ziplist::entries(&d.string()?)?)?),
        rdb::RDB_TYPE_LIST_QUICKLIST => {
            let n = d.count(1)?;
            let mut v = Vec::new();
            for _ in 0..n {
                v.extend(texts(ziplist::entries(&d.string()?)?));
            }
            Value::List(v)
        }
        rdb::RDB_TYPE_LIST_QUICKLIST_2 => {
            let n = d.count(2)?;
            let mut v = Vec::new();
            for _ in 0..n {
                let container = d.length()?;
                let s = d.string()?;
                match container {
                    rdb::QUICKLIST_NODE_CONTAINER_PLAIN => v.push(s.into_owned()),
                    rdb::QUICKLIST_NODE_CONTAINER_PACKED => v.extend(texts(listpack::entries(&s)?)),
                    _ => return Err(Corrupt),
                }
            }
            Value::List(v)
        }
        rdb::RDB_TYPE_HASH_LISTPACK => Value::Hash(pairs(listpack::entries(&d.string()?)?)?),
        rdb::RDB_TYPE_ZSET_LISTPACK => Value::Zset(scored(listpack::entries(&d.string()?)?)?),
        _ => return Err(Corrupt),
    })
}

/// A DUMP payload's value.
fn read_dump(payload: &[u8]) -> Result<Value, Corrupt> {
    let body = rdb::check_dump_footer(payload).map_err(|_| Corrupt)?;
    let mut d = Decoder::new(body);
    let v = read_value(d.u8()?, &mut d)?;
    if !d.is_empty() {
        return Err(Corrupt);
    }
    Ok(v)
}

/// A snapshot file's keys, with their deadlines, as `rdbLoad` walks it.
fn read_file(f: &[u8]) -> Result<Vec<Key>, Corrupt> {
    let mut d = Decoder::new(f);
    let magic = d.bytes(9)?;
    if &magic[..5] != b"REDIS" {
        return Err(Corrupt);
    }
    let version: u32 = std::str::from_utf8(&magic[5..])
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or(Corrupt)?;
    let mut keys = Vec::new();
    let mut deadline = None;
    loop {
        match d.u8()? {
            rdb::RDB_OPCODE_AUX => {
                d.string()?;
                d.string()?;
            }
            rdb::RDB_OPCODE_SELECTDB => {
                d.length()?;
            }
            rdb::RDB_OPCODE_RESIZEDB => {
                d.length()?;
                d.length()?;
            }
            rdb::RDB_OPCODE_EXPIRETIME_MS => deadline = Some(d.millis()?),
            rdb::RDB_OPCODE_EXPIRETIME => deadline = Some(d.secs()? as i64 * 1000),
            rdb::RDB_OPCODE_IDLE => {
                d.length()?;
            }
            rdb::RDB_OPCODE_FREQ => {
                d.u8()?;
            }
            rdb::RDB_OPCODE_EOF => {
                if version >= 5 {
                    let at = d.pos();
                    let crc = d.u64_le()?;
                    if crc != 0 && crc != crc64(0, &f[..at]) {
                        return Err(Corrupt);
                    }
                }
                return if d.is_empty() { Ok(keys) } else { Err(Corrupt) };
            }
            t if rdb::is_object_type(t) => {
                let key = d.string()?.into_owned();
                let v = read_value(t, &mut d)?;
                keys.push((key, v, deadline.take()));
            }
            _ => return Err(Corrupt),
        }
    }
}

fn strs(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn hash(v: &[&str]) -> Value {
    Value::Hash(
        v.chunks(2)
            .map(|p| (p[0].as_bytes().to_vec(), p[1].as_bytes().to_vec()))
            .collect(),
    )
}

fn zset(v: &[(&str, f64)]) -> Value {
    Value::Zset(v.iter().map(|(m, s)| (m.as_bytes().to_vec(), *s)).collect())
}

fn l_args() -> Vec<Vec<u8>> {
    let mut v = strs(&[
        "a",
        "1",
        "-5",
        "300",
        "70000",
        "abc",
        "-4096",
        "4095",
        "-32768",
        "8388607",
        "-2147483648",
        "9223372036854775807",
    ]);
    v.push(vec![b'x'; 70]);
    v.push(vec![b'y'; 5000]);
    v
}

/// `ZADD zbig`'s members in score order, and their scores as Redis writes them in a listpack.
fn zbig() -> Vec<(Vec<u8>, String)> {
    (0..200)
        .map(|i| {
            let s = i as f64 * 1.25 - 40.0;
            (format!("member:{i}").into_bytes(), format!("{s}"))
        })
        .collect()
}

#[test]
fn rdb_dump_payloads_read_back() {
    assert_eq!(
        read_dump(DUMP_LSMALL),
        Ok(Value::List(strs(&["a", "1", "-5", "300"])))
    );
    assert_eq!(read_dump(DUMP_L), Ok(Value::List(l_args())));
    assert_eq!(
        read_dump(DUMP_H),
        Ok(hash(&["f1", "v1", "f2", "123", "name", "redis"]))
    );
    let z = zset(&[("three", -3.0), ("one", 1.0), ("two", 2.5), ("big", 1e300)]);
    assert_eq!(read_dump(DUMP_Z), Ok(z));
    assert_eq!(read_dump(DUMP_Q), Ok(Value::List(vec![vec![b'q'; 16378]])));
    assert_eq!(
        read_dump(DUMP_Q2),
        Ok(Value::List(vec![vec![b'q'; 16379], vec![b'w'; 16377]]))
    );
    assert_eq!(read_dump(DUMP_SS), Ok(Value::Set(strs(&["x", "y"]))));
    let want: Vec<(Vec<u8>, f64)> = zbig().into_iter().map(|(m, s)| (m, s.parse().unwrap())).collect();
    assert_eq!(read_dump(DUMP_ZBIG), Ok(Value::Zset(want)));
}

#[test]
fn rdb_snapshot_files_read_back() {
    // What redis-server 7.0.15 holds after loading each file.
    let keys = read_file(FILE_ENCODINGS).unwrap();
    let get = |k: &str| keys.iter().find(|(n, ..)| n == k.as_bytes()).map(|(_, v, _)| v);
    assert_eq!(keys.len(), 13);
    assert!(keys.iter().all(|(.., ttl)| ttl.is_none()));
    assert_eq!(get("compressible"), Some(&Value::Str(vec![b'a'; 137])));
    assert_eq!(get("string"), Some(&Value::Str(b"Hello World".to_vec())));
    assert_eq!(get("number"), Some(&Value::Str(b"10".to_vec())));
    let list = strs(&["1", "2", "3", "a", "b", "c", "100000", "6000000000"]);
    assert_eq!(get("list_zipped"), Some(&Value::List(list.clone())));
    assert_eq!(
        get("list"),
        Some(&Value::List([list.clone(), list.clone(), list.clone()].concat()))
    );
    assert_eq!(get("set"), Some(&Value::Set(sorted(list.clone()))));
    assert_eq!(
        get("set_zipped_1"),
        Some(&Value::Set(strs(&["1", "2", "3", "4"])))
    );
    let set2 = strs(&["100000", "200000", "300000", "400000"]);
    assert_eq!(get("set_zipped_2"), Some(&Value::Set(set2)));
    let set3 = [
        "1000000000",
        "2000000000",
        "3000000000",
        "4000000000",
        "5000000000",
        "6000000000",
    ];
    assert_eq!(get("set_zipped_3"), Some(&Value::Set(strs(&set3))));
    assert_eq!(get("hash_zipped"), Some(&hash(&["a", "1", "b", "2", "c", "3"])));
    let Some(Value::Hash(h)) = get("hash") else {
        panic!("hash")
    };
    let mut h = h.clone();
    h.sort();
    let mut want = [
        ("a", "1"),
        ("aa", "10"),
        ("aaa", "100"),
        ("b", "2"),
        ("bb", "20"),
        ("bbb", "200"),
        ("c", "3"),
        ("cc", "30"),
        ("ccc", "300"),
        ("ddd", "400"),
        ("eee", "5000000000"),
    ]
    .map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec()));
    want.sort();
    assert_eq!(h, want);
    assert_eq!(
        get("zset_zipped"),
        Some(&zset(&[("a", 1.0), ("b", 2.0), ("c", 3.0)]))
    );
    let z = zset(&[
        ("a", 1.0),
        ("b", 2.0),
        ("c", 3.0),
        ("aa", 10.0),
        ("bb", 20.0),
        ("cc", 30.0),
        ("aaa", 100.0),
        ("bbb", 200.0),
        ("ccc", 300.0),
        ("aaaa", 1000.0),
        ("cccc", 123456789.0),
        ("bbbb", 5000000000.0),
    ]);
    assert_eq!(get("zset"), Some(&z));

    let one = |f: &[u8]| {
        let mut k = read_file(f).unwrap();
        assert_eq!(k.len(), 1);
        let (name, v, _) = k.pop().unwrap();
        (String::from_utf8(name).unwrap(), v)
    };
    assert_eq!(
        one(FILE_HASH_ZIPMAP),
        ("hash".into(), hash(&["f1", "v1", "f2", "v2"]))
    );
    assert_eq!(
        one(FILE_HASH_ZIPLIST),
        ("hash".into(), hash(&["f1", "v1", "f2", "v2"]))
    );
    assert_eq!(
        one(FILE_ZSET_ZIPLIST),
        ("zset".into(), zset(&[("one", 1.0), ("two", 2.0)]))
    );
    let k = read_file(FILE_LIST_QUICKLIST).unwrap();
    assert_eq!(k[0].0, b"list");
    assert_eq!(k[0].1, Value::List(strs(&["7"])));
    assert_eq!(k[1].0, b"x");
    assert_eq!(k[1].1, Value::Str(b"7".to_vec()));
}

/// The listpack a DUMP of a one-node list or a listpack hash/zset carries, decompressed.
fn listpacks_in(payload: &[u8]) -> Vec<Vec<u8>> {
    let body = rdb::check_dump_footer(payload).unwrap();
    let mut d = Decoder::new(body);
    match d.u8().unwrap() {
        rdb::RDB_TYPE_LIST_QUICKLIST_2 => (0..d.length().unwrap())
            .map(|_| {
                assert_eq!(d.length(), Ok(rdb::QUICKLIST_NODE_CONTAINER_PACKED));
                d.string().unwrap().into_owned()
            })
            .collect(),
        _ => vec![d.string().unwrap().into_owned()],
    }
}

fn written(items: &[&[u8]]) -> Vec<u8> {
    let mut w = ListpackWriter::new();
    for i in items {
        w.push_str(i);
    }
    let expect_len = w.bytes_len();
    let lp = w.finish();
    assert_eq!(lp.len(), expect_len);
    lp
}

#[test]
fn rdb_listpack_writer_matches_redis_byte_for_byte() {
    let refs = |v: &[Vec<u8>]| v.iter().map(|x| x.to_vec()).collect::<Vec<_>>();
    let as_slices = |v: &Vec<Vec<u8>>| -> Vec<u8> { written(&v.iter().map(|x| &x[..]).collect::<Vec<_>>()) };
    assert_eq!(listpacks_in(DUMP_LSMALL), [written(&[b"a", b"1", b"-5", b"300"])]);
    assert_eq!(listpacks_in(DUMP_L), [as_slices(&refs(&l_args()))]);
    assert_eq!(
        listpacks_in(DUMP_H),
        [written(&[b"f1", b"v1", b"f2", b"123", b"name", b"redis"])]
    );
    let z: [&[u8]; 8] = [
        b"three",
        b"-3",
        b"one",
        b"1",
        b"two",
        b"2.5",
        b"big",
        b"1.0000000000000001e+300",
    ];
    assert_eq!(listpacks_in(DUMP_Z), [written(&z)]);
    // A 16378-byte string's encoding is 16383 bytes, whose backlen Redis writes in three bytes.
    let q = written(&[&[b'q'; 16378]]);
    assert_eq!(q[q.len() - 4..], [0x00, 0xff, 0xff, 0xff]);
    assert_eq!(listpacks_in(DUMP_Q), [q]);
    assert_eq!(
        listpacks_in(DUMP_Q2),
        [written(&[&[b'q'; 16379]]), written(&[&[b'w'; 16377]])]
    );
    let zb: Vec<Vec<u8>> = zbig()
        .into_iter()
        .flat_map(|(m, s)| [m, s.into_bytes()])
        .collect();
    assert_eq!(listpacks_in(DUMP_ZBIG), [as_slices(&zb)]);
}

#[test]
fn rdb_listpack_writer_matches_redis_past_65535_entries() {
    // `CONFIG SET hash-max-listpack-entries 100000`, then `HSET bigh` with f<i> set to `val<i>` when
    // i is a multiple of 3, else to 7i - 50000, for i below 33000, on redis-server 7.0.15; with
    // `rdbcompression no` its DUMP carries the listpack whole: 462158 bytes, count 65535, this CRC-64.
    let mut w = ListpackWriter::new();
    for i in 0..33000i64 {
        w.push_str(format!("f{i}").as_bytes());
        if i % 3 == 0 {
            w.push_str(format!("val{i}").as_bytes());
        } else {
            w.push_int(i * 7 - 50000);
        }
    }
    assert_eq!(w.len(), 66000);
    let lp = w.finish();
    assert_eq!(lp.len(), 462_158);
    assert_eq!(lp[..6], [0x4e, 0x0d, 0x07, 0x00, 0xff, 0xff]);
    assert_eq!(
        lp[lp.len() - 8..],
        [0x39, 0x07, 0xf2, 0x01, 0xc3, 0x02, 0x04, 0xff]
    );
    assert_eq!(crc64(0, &lp), 0x2784_203b_4f50_4d33);
    assert_eq!(listpack::entries(&lp).unwrap().len(), 66000);
}

#[test]
fn rdb_encoder_rewrites_dump_payloads() {
    // The same values written again with rdbcompression on: Redis's bytes, its LZF output included.
    let quicklist = |nodes: &[Vec<u8>]| {
        let mut e = Encoder::new(true);
        e.u8(rdb::RDB_TYPE_LIST_QUICKLIST_2);
        e.len(nodes.len() as u64);
        for n in nodes {
            e.len(rdb::QUICKLIST_NODE_CONTAINER_PACKED);
            e.string(n);
        }
        let mut p = e.take();
        rdb::dump_footer(&mut p);
        p
    };
    let single = |t: u8, lp: &[u8]| {
        let mut e = Encoder::new(true);
        e.u8(t);
        e.string(lp);
        let mut p = e.take();
        rdb::dump_footer(&mut p);
        p
    };
    for dump in [DUMP_LSMALL, DUMP_L, DUMP_Q, DUMP_Q2] {
        assert_eq!(quicklist(&listpacks_in(dump)), dump);
    }
    assert_eq!(
        single(rdb::RDB_TYPE_HASH_LISTPACK, &listpacks_in(DUMP_H)[0]),
        DUMP_H
    );
    assert_eq!(
        single(rdb::RDB_TYPE_ZSET_LISTPACK, &listpacks_in(DUMP_Z)[0]),
        DUMP_Z
    );
    assert_eq!(
        single(rdb::RDB_TYPE_ZSET_LISTPACK, &listpacks_in(DUMP_ZBIG)[0]),
        DUMP_ZBIG
    );
    let mut e = Encoder::new(true);
    e.u8(rdb::RDB_TYPE_SET);
    e.len(2);
    e.string(b"y");
    e.string(b"x");
    let mut p = e.take();
    rdb::dump_footer(&mut p);
    assert_eq!(p, DUMP_SS);
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `good` cut at every length, then `flips` copies with one to four bits flipped.
    fn mutations(&mut self, good: &[u8], flips: usize) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = (0..good.len()).map(|n| good[..n].to_vec()).collect();
        for _ in 0..flips {
            let mut b = good.to_vec();
            for _ in 0..1 + self.next() % 4 {
                let i = self.next() as usize % b.len();
                b[i] ^= 1 << (self.next() % 8);
            }
            out.push(b);
        }
        out
    }
}

#[test]
fn rdb_corrupt_payloads_never_panic() {
    let mut rng = Rng(0x5eed_0fc0_ffee);
    for dump in [
        DUMP_LSMALL,
        DUMP_L,
        DUMP_H,
        DUMP_Z,
        DUMP_Q,
        DUMP_Q2,
        DUMP_SS,
        DUMP_ZBIG,
    ] {
        let body = &dump[..dump.len() - 10];
        for m in rng.mutations(body, 2000) {
            let mut d = Decoder::new(&m);
            if let Ok(t) = d.u8() {
                let _ = read_value(t, &mut d);
            }
        }
        for m in rng.mutations(dump, 200) {
            if m != dump {
                assert!(read_dump(&m).is_err());
            }
        }
    }
    for file in [
        FILE_ENCODINGS,
        FILE_HASH_ZIPMAP,
        FILE_HASH_ZIPLIST,
        FILE_ZSET_ZIPLIST,
        FILE_LIST_QUICKLIST,
    ] {
        for m in rng.mutations(file, 2000) {
            let _ = read_file(&m);
        }
    }
}

#[test]
fn rdb_corrupt_packed_forms_never_panic() {
    let mut rng = Rng(0xfeed_beef_1234_5678);
    let mut lps: Vec<Vec<u8>> = [DUMP_L, DUMP_H, DUMP_Z, DUMP_ZBIG]
        .iter()
        .flat_map(|d| listpacks_in(d))
        .collect();
    lps.push(written(&[
        b"",
        b"-1",
        b"9223372036854775807",
        b"-9223372036854775808",
        &[b'k'; 300],
    ]));
    for lp in &lps {
        let want = listpack::entries(lp).unwrap();
        for m in rng.mutations(lp, 3000) {
            if let Ok(es) = listpack::entries(&m) {
                // Whatever passes holds its count and bytes: each entry is read from inside it.
                assert!(es.len() <= m.len());
            }
            let _ = listpack::iter(&m).count();
        }
        assert_eq!(listpack::iter(lp).collect::<Result<Vec<_>, _>>().unwrap(), want);
    }
    // The ziplists, intsets and zipmap inside the asset files.
    let mut packed = Vec::new();
    for file in [
        FILE_ENCODINGS,
        FILE_HASH_ZIPLIST,
        FILE_ZSET_ZIPLIST,
        FILE_LIST_QUICKLIST,
        FILE_HASH_ZIPMAP,
    ] {
        packed.extend(strings_in(file));
    }
    let mut seen = [0; 3];
    for s in &packed {
        for m in rng.mutations(s, 1000) {
            let _ = ziplist::entries(&m);
            let _ = intset::members(&m);
            let _ = zipmap::pairs(&m);
        }
        seen[0] += ziplist::entries(s).is_ok() as usize;
        seen[1] += intset::members(s).is_ok() as usize;
        seen[2] += zipmap::pairs(s).is_ok() as usize;
    }
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
}

/// Every string of a packed type in a snapshot file (the ziplists, intsets and zipmaps).
fn strings_in(file: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut d = Decoder::new(file);
    d.bytes(9).unwrap();
    loop {
        match d.u8().unwrap() {
            rdb::RDB_OPCODE_AUX => {
                d.string().unwrap();
                d.string().unwrap();
            }
            rdb::RDB_OPCODE_SELECTDB => {
                d.length().unwrap();
            }
            rdb::RDB_OPCODE_RESIZEDB => {
                d.length().unwrap();
                d.length().unwrap();
            }
            rdb::RDB_OPCODE_EOF => return out,
            t => {
                d.skip_string().unwrap();
                match t {
                    9..=13 => out.push(d.string().unwrap().into_owned()),
                    rdb::RDB_TYPE_LIST_QUICKLIST => {
                        for _ in 0..d.length().unwrap() {
                            out.push(d.string().unwrap().into_owned());
                        }
                    }
                    _ => {
                        read_value(t, &mut d).unwrap();
                    }
                }
            }
        }
    }
}
