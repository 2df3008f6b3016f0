// Simplified state borders of the central US around the simulators' region (35–45°N,
// 90–105°W), drawn under the vehicles so the map reads as a map. Hand-made for this page:
// the surveyed borders (parallels and meridians) at their true positions, the river borders
// (Missouri, Mississippi, Big Sioux, Red) as a few straight segments each: good to a few
// miles, not a survey. Shipped with the page; nothing is fetched from the internet.
// Each border is a polyline of [longitude, latitude] points; labels sit at [lon, lat].
"use strict";

const STATE_BORDERS = [
  // the 37th parallel: Colorado | New Mexico, Kansas | Oklahoma
  [[-109.05, 37.0], [-94.62, 37.0]],
  // Oklahoma's panhandle | Texas, then the 100th meridian down to the Red River
  [[-103.0, 36.5], [-100.0, 36.5], [-100.0, 34.56]],
  // New Mexico | Oklahoma and Texas
  [[-103.0, 37.0], [-103.0, 32.0]],
  // Red River: Oklahoma | Texas
  [[-100.0, 34.56], [-98.0, 34.1], [-96.0, 33.85], [-94.48, 33.64]],
  // Oklahoma | Arkansas, Missouri | Kansas and Oklahoma
  [[-94.48, 33.64], [-94.43, 35.4], [-94.62, 36.5], [-94.62, 39.1]],
  // Missouri | Arkansas (36.5°N, then the bootheel)
  [[-94.62, 36.5], [-90.15, 36.5], [-90.37, 36.0], [-89.7, 36.0]],
  // Kansas | Nebraska (40°N); Colorado | Kansas and Nebraska (102.05°W)
  [[-102.05, 40.0], [-95.31, 40.0]],
  [[-102.05, 37.0], [-102.05, 41.0], [-104.05, 41.0], [-109.05, 41.0]],
  // Wyoming | Nebraska and South Dakota (104.05°W)
  [[-104.05, 41.0], [-104.05, 45.94]],
  // Nebraska | South Dakota (43°N, then the Missouri)
  [[-104.05, 43.0], [-98.5, 43.0], [-97.4, 42.86], [-96.45, 42.5]],
  // the Missouri from Sioux City down to Kansas City: Nebraska | Iowa and Missouri, Kansas | Missouri
  [[-96.45, 42.5], [-96.1, 41.9], [-95.9, 41.3], [-95.77, 40.6], [-95.31, 40.0],
   [-94.95, 39.5], [-94.62, 39.1]],
  // South Dakota | Iowa (Big Sioux) and Minnesota
  [[-96.45, 42.5], [-96.6, 43.0], [-96.45, 43.5], [-96.45, 45.3], [-96.56, 45.94]],
  // Iowa | Minnesota (43.5°N)
  [[-96.45, 43.5], [-91.22, 43.5]],
  // Iowa | Missouri (about 40.6°N, then the Des Moines river)
  [[-95.77, 40.6], [-91.73, 40.6], [-91.42, 40.38]],
  // the Mississippi: Minnesota | Wisconsin, Iowa | Wisconsin and Illinois, Missouri | Illinois
  [[-92.8, 45.6], [-92.0, 44.4], [-91.22, 43.5], [-91.1, 42.7], [-90.64, 42.5], [-90.15, 41.8],
   [-91.0, 41.2], [-91.42, 40.38], [-90.2, 38.6], [-89.5, 37.3], [-89.15, 36.98],
   [-89.7, 36.0], [-90.3, 35.0]],
  // Wisconsin | Illinois (42.5°N)
  [[-90.64, 42.5], [-87.8, 42.5]],
];

const STATE_LABELS = [
  ["SOUTH DAKOTA", -100.2, 44.3], ["NEBRASKA", -99.8, 41.6], ["KANSAS", -98.4, 38.5],
  ["OKLAHOMA", -97.3, 35.6], ["IOWA", -93.5, 42.0], ["MISSOURI", -92.5, 38.3],
  ["MINNESOTA", -94.2, 44.6], ["COLORADO", -103.55, 39.7], ["WY", -104.55, 44.2],
  ["ARKANSAS", -92.4, 35.6], ["TEXAS", -101.5, 35.4], ["IL", -90.45, 40.2],
  ["WI", -90.5, 44.3], ["NM", -104.0, 35.8],
];
