// Renders a stored Lighthouse JSON report (argv[2]) as Lighthouse's own HTML report (argv[3]), with the report
// renderer of the pinned lighthouse package: the page the Lighthouse CLI would have written with --output html.
import fs from 'node:fs';
import {ReportGenerator} from 'lighthouse/report/generator/report-generator.js';

const [, , source, target] = process.argv;
const lhr = JSON.parse(fs.readFileSync(source, 'utf8'));
fs.writeFileSync(target, ReportGenerator.generateReportHtml(lhr));
