  // cell appends to tr a td of class cls (none when empty) holding text.
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  // placed is a div of class cls placed from startMS for durMS on an axis
  // of axisMS, at least 0.1 % wide so the shortest span still shows.
  function placed(cls, startMS, durMS, axisMS, title) {
    var d = document.createElement("div");
    d.className = cls;
    d.style.left = (100 * startMS / axisMS) + "%";
    d.style.width = Math.max(100 * durMS / axisMS, 0.1) + "%";
    d.title = title;
    return d;
  }
  // laneCell appends to tr a track cell holding an empty lane, and gives
  // the lane.
  function laneCell(tr) {
    var lane = document.createElement("div");
    lane.className = "lane";
    cell(tr, "", "track").appendChild(lane);
    return lane;
  }
  // ticks fills el with five labels, 0 to axisMS in quarters.
  function ticks(el, axisMS) {
    [0, 0.25, 0.5, 0.75, 1].forEach(function (f) {
      var span = document.createElement("span");
      span.textContent = fmt(f * axisMS) + " ms";
      el.appendChild(span);
    });
  }
